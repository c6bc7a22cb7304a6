// Command frontier reads the summary.csv of a served comparison of one
// serverless workflow ('shoal sim ... --out DIR', bench/faasconf/serve.sh)
// and prints how FaaSConf's default policy stands: against the workflow's
// own configuration (static) on success, p99 and cost, and against each
// other method's frontier (its settings swept): the cheapest of its
// settings that serves at least as many requests as FaaSConf, with a p99
// at most FaaSConf's, and what FaaSConf saves against it. A refused or
// failed request counts against success.
//
//	go run ./bench/faasconf/frontier DIR/summary.csv
package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

type point struct {
	policy             string
	success, p99, cost float64
	mean               float64
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: frontier SUMMARY.csv")
		os.Exit(2)
	}
	pts, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontier:", err)
		os.Exit(1)
	}
	var static, faas *point
	families := map[string][]point{}
	for i, p := range pts {
		switch {
		case p.policy == "static":
			static = &pts[i]
		case family(p.policy) == "faasconf" && !strings.Contains(p.policy, "qos="):
			faas = &pts[i]
		}
		families[family(p.policy)] = append(families[family(p.policy)], p)
	}
	if static == nil || faas == nil {
		fmt.Fprintln(os.Stderr, "frontier: want a static and a faasconf:FILE policy (no qos=) in", os.Args[1])
		os.Exit(1)
	}
	ok := func(b bool) string {
		if b {
			return "met"
		}
		return "missed"
	}
	fmt.Printf("faasconf: success %.2f%%, mean %.3f s, p99 %.3f s, cost $%.4f\n", faas.success, faas.mean, faas.p99, faas.cost)
	fmt.Printf("static:   success %.2f%%, mean %.3f s, p99 %.3f s, cost $%.4f\n", static.success, static.mean, static.p99, static.cost)
	fmt.Printf("  success %+.2f points (target >= -0.5: %s); p99 %.3fx (target <= 1.15: %s); cost %+.1f%% (target <= -10%%: %s)\n",
		faas.success-static.success, ok(faas.success >= static.success-0.5),
		faas.p99/static.p99, ok(faas.p99 <= 1.15*static.p99),
		100*(faas.cost/static.cost-1), ok(faas.cost <= 0.9*static.cost))
	names := make([]string, 0, len(families))
	for f := range families {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if f == "faasconf" {
			continue
		}
		var best *point
		for i, p := range families[f] {
			if p.success >= faas.success-1e-9 && p.p99 <= faas.p99+1e-9 && (best == nil || p.cost < best.cost) {
				best = &families[f][i]
			}
		}
		if best == nil {
			fmt.Printf("frontier %-10s none of %d settings serves as many with as low a p99\n", f, len(families[f]))
			continue
		}
		fmt.Printf("frontier %-10s %s: success %.2f%%, p99 %.3f s, cost $%.4f: faasconf %+.1f%% (target <= -10%%: %s)\n",
			f, best.policy, best.success, best.p99, best.cost, 100*(faas.cost/best.cost-1), ok(faas.cost <= 0.9*best.cost))
	}
}

// family is a policy's method: static (every size), openfaas, jolteon,
// faasconf (every QoS bound).
func family(policy string) string {
	name, _, _ := strings.Cut(policy, ":")
	return name
}

func read(path string) ([]point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"policy", "success_pct", "p99_s", "cost", "mean_s"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, h)
		}
	}
	var out []point
	for _, r := range rows[1:] {
		p := point{policy: r[col["policy"]]}
		for _, x := range []struct {
			dst  *float64
			name string
		}{{&p.success, "success_pct"}, {&p.p99, "p99_s"}, {&p.cost, "cost"}, {&p.mean, "mean_s"}} {
			v, err := strconv.ParseFloat(r[col[x.name]], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s of %s: %v", path, x.name, p.policy, err)
			}
			*x.dst = v
		}
		out = append(out, p)
	}
	return out, nil
}
