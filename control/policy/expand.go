package policy

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// sweep is a parameter's range: FROM..TO/STEP, in the parameter's unit.
var sweep = regexp.MustCompile(`^([^=:]+)=(-?[0-9.]+(?:e-?[0-9]+)?)\.\.(-?[0-9.]+(?:e-?[0-9]+)?)/([0-9.]+(?:e-?[0-9]+)?)$`)

// Expand turns each parameter range of a policy name into its settings,
// FROM, FROM+STEP, ... up to TO: hpa:target=30..90/15 is hpa:target=30,
// hpa:target=45, ..., hpa:target=90, one policy each (several ranges give
// every combination). A name without a range is itself. Each name it
// returns parses.
func Expand(name string) ([]string, error) {
	out := []string{""}
	for i, seg := range strings.Split(name, ":") {
		sep := ":"
		if i == 0 {
			sep = ""
		}
		vals := []string{seg}
		if m := sweep.FindStringSubmatch(seg); m != nil && m[1] != "file" {
			var err error
			if vals, err = settings(name, m); err != nil {
				return nil, err
			}
		}
		next := make([]string, 0, len(out)*len(vals))
		for _, o := range out {
			for _, v := range vals {
				next = append(next, o+sep+v)
			}
		}
		out = next
	}
	for _, n := range out {
		if _, err := Parse(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func settings(name string, m []string) ([]string, error) {
	from, err1 := strconv.ParseFloat(m[2], 64)
	to, err2 := strconv.ParseFloat(m[3], 64)
	step, err3 := strconv.ParseFloat(m[4], 64)
	if err1 != nil || err2 != nil || err3 != nil || !(step > 0) || to < from {
		return nil, fmt.Errorf("policy %s: %s=%s..%s/%s is not FROM..TO/STEP with FROM <= TO and STEP > 0", name, m[1], m[2], m[3], m[4])
	}
	n := int(math.Floor((to-from)/step+1e-9)) + 1
	if n > 1000 {
		return nil, fmt.Errorf("policy %s: %s's range has %d settings (at most 1000)", name, m[1], n)
	}
	vals := make([]string, n)
	for k := range n {
		// Round away the float error of from + k*step (30..90/0.1).
		x := from + float64(k)*step
		vals[k] = m[1] + "=" + strconv.FormatFloat(roundTo(x, 12), 'g', -1, 64)
	}
	return vals, nil
}

func roundTo(x float64, digits int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', digits, 64), 64)
	return v
}
