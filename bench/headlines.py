"""Checks measured figures against the verdict tables of docs/results.

bench/headlines.sh runs the documented commands; this reads their outputs,
measures each verdict row's margin the way its page states it, prints the
measured figure beside the stated one, and records every row whose
measurement falls outside the stated 95% interval (or, for a row stated
without one, differs from the stated figure) in OUT/failed.

Usage: python3 bench/headlines.py SECTION OUT
"""
import csv
import json
import math
import os
import re
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
MARGIN = re.compile(r"([+−-]?\d+(?:\.\d+)?)% \[([+−-]?\d+(?:\.\d+)?)%, ([+−-]?\d+(?:\.\d+)?)%\]")


def num(s):
    return float(s.replace("−", "-").replace(",", ""))


def verdict_rows(page):
    """The verdict table's rows of docs/results/PAGE.md, as lists of cells."""
    text = open(os.path.join(ROOT, "docs", "results", page + ".md")).read()
    text = text.split("\n## Verdict\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows[1:]


def row(page, first, second):
    for r in verdict_rows(page):
        if r[0].startswith(first) and r[1].startswith(second):
            return r
    raise SystemExit(f"headlines: no verdict row '{first} | {second}' in docs/results/{page}.md")


def stated_margin(r):
    for c in r:
        m = MARGIN.search(c)
        if m:
            return num(m.group(1)), num(m.group(2)), num(m.group(3)), [decimals(g) for g in m.groups()]
    return None


def decimals(s):
    """How many decimals a stated number has ("3.83" -> 2)."""
    return len(s.split(".")[1]) if "." in s else 0


class Report:
    def __init__(self, out):
        self.out = out
        self.failed = []

    def margin(self, page, first, second, measured, lo=None, hi=None, note="", exact=True):
        """A row stated as 'M% [LO%, HI%]': measured (a fraction, 0.1 = +10%) must lie in [LO, HI];
        exact (a deterministic run: the same seeds, the same result), the measured margin and
        interval must also round to the stated figures."""
        r = row(page, first, second)
        st = stated_margin(r)
        if st is None:
            raise SystemExit(f"headlines: the row '{first} | {second}' of {page}.md states no margin with an interval")
        m = 100 * measured
        ok = st[1] - 0.05 <= m <= st[2] + 0.05
        if exact and lo is not None:
            got = [round(100 * x, d) for x, d in zip((measured, lo, hi), st[3])]
            if got != [round(x, d) for x, d in zip(st[:3], st[3])]:
                ok, note = False, (note + "; " if note else "") + "rounds to " + ", ".join(f"{x:+.{d}f}%" for x, d in zip(got, st[3]))
        ci = "" if lo is None else f" [{100 * lo:+.1f}%, {100 * hi:+.1f}%]"
        self.line(page, f"{first} | {second}", f"{st[0]:+.1f}% [{st[1]:+.1f}%, {st[2]:+.1f}%]", f"{m:+.1f}%{ci}", ok, note)

    def value(self, page, first, second, stated, measured, ok, note=""):
        self.line(page, f"{first} | {second}", stated, measured, ok, note)

    def line(self, page, what, stated, measured, ok, note):
        verdict = "ok" if ok else "OUTSIDE"
        print(f"{page:11s} {what[:58]:58s} stated {stated:26s} measured {measured:24s} {verdict}{'  ' + note if note else ''}")
        if not ok:
            self.failed.append(f"{page}: {what}: stated {stated}, measured {measured}")

    def close(self):
        if self.failed:
            with open(os.path.join(self.out, "failed"), "a") as f:
                for x in self.failed:
                    f.write(x + "\n")


def paired(a, b):
    """Geometric mean of a/b over paired seeds, with its 95% interval."""
    logs = [math.log(x / y) for x, y in zip(a, b)]
    m = statistics.mean(logs)
    h = T95[len(logs) - 1] * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m) - 1, math.exp(m - h) - 1, math.exp(m + h) - 1


def unpaired(a, ha, b, hb):
    """a/b - 1 with the interval the pages use: the relative half-widths added in quadrature."""
    r = a / b
    h = r * math.hypot(ha / a, hb / b)
    return r - 1, r - h - 1, r + h - 1


def runs_by_policy(path, metric):
    by = {}
    for r in csv.DictReader(open(path)):
        by.setdefault(r["policy"], {})[int(r["seed"])] = float(r[metric])
    return by


def lb_sim(rep, out):
    by = runs_by_policy(os.path.join(out, "lb-moderate-cpu", "runs.csv"), "p99_s")
    seeds = sorted(by["distr-lb-general"])
    g = [by["distr-lb-general"][s] for s in seeds]
    for other, second in (("probing-sed", "`probing-sed`"), ("prequal", "`prequal`")):
        m, lo, hi = paired(g, [by[other][s] for s in seeds])
        rep.margin("distr-lb", "`lb-moderate-cpu`, load 0.85", second, m, lo, hi, f"{len(seeds)} seeds, paired")


def lb_testbed(rep, out):
    rows = list(csv.DictReader(open(os.path.join(out, "testbed", "quality.csv"))))
    p99 = {(r["policy"], r["load"], r["seed"]): float(r["p99"]) for r in rows}
    for load, peer, first, second in (("0.85", "haproxy-leastconn", "testbed, load 0.85", "HAProxy"),
                                      ("0.95", "nginx-least_conn", "testbed, load 0.95", "nginx")):
        seeds = sorted({k[2] for k in p99 if k[1] == load and k[0] == "shoal-distr-lb-general"})
        m, lo, hi = paired([p99["shoal-distr-lb-general", load, s] for s in seeds], [p99[peer, load, s] for s in seeds])
        rep.margin("distr-lb", first, second, m, lo, hi, f"{len(seeds)} seeds, paired", exact=False)  # a testbed: not repeatable


def lb_production(rep, out):
    d = os.path.join(out, "production")
    win = tie = lose = within = worse = 0
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json"):
            continue
        st = {p["policy"]: p["summary"] for p in json.load(open(os.path.join(d, name)))["policies"]}
        g = st["distr-lb-general"]
        prod = min(("sed", "prequal", "least-request", "c3", "peak-ewma"), key=lambda n: st[n]["p99"]["mean"])
        r = g["p99"]["mean"] / st[prod]["p99"]["mean"]
        win, tie, lose = win + (r < 0.98), tie + (0.98 <= r <= 1.02), lose + (r > 1.02)
        shoal = min((n for n in st if n == "probing-sed" or n.startswith("distr-lb+probing")), key=lambda n: st[n]["p99"]["mean"])
        ok = g["p99"]["mean"] <= 1.02 * st[shoal]["p99"]["mean"] and g["mean"]["mean"] <= st[shoal]["mean"]["mean"]
        within, worse = within + ok, worse + (not ok)
    r = row("distr-lb", "7 scenarios", "the best production balancer")
    measured = f"win {win}, tie {tie}, lose {lose}"
    rep.value("distr-lb", "7 scenarios × 5 loads", "the best production balancer", r[7], measured, measured == r[7])
    r = row("distr-lb", "the same 35 cells", "`probing-sed`")
    measured = f"tie or win {within}, lose {worse}"
    rep.value("distr-lb", "the same 35 cells", "`probing-sed`", r[7], measured, measured == r[7])


def drpc(rep, out):
    pts = {}
    for name in ("pareto", "alibaba250"):
        path = os.path.join(out, "drpc", name, "pareto.csv")
        for r in csv.reader(open(path)):
            if r[0] == "workload":
                continue
            wl = r[0] if name == "pareto" else "alibaba250"
            pts[wl, r[1], float(r[3])] = (float(r[5]), float(r[6]), float(r[15]))
    for first, wl, budget, target in (("surge, 10 min", "surge", 60, 45), ("surge, at the HPA default", "surge", 45, 75),
                                      ("steady 200 req/s, 5 min", "steady", 60, 75), ("steady 200 req/s, 30 min", "steady-30m", 60, 60),
                                      ("change of request mix", "mixchange", 60, 60), ("held-out Alibaba trace, 250 min", "alibaba250", 60, 45)):
        d, h = pts.get((wl, "drpc", budget)), pts.get((wl, "hpa", target))
        if d is None or h is None:
            rep.value("drpc", first, "", "a point", f"no {wl} point in pareto.csv", False)
            continue
        m, lo, hi = unpaired(d[0], d[1], h[0], h[1])
        rep.margin("drpc", first, "target", m, lo, hi, f"cost ratio {d[2] / h[2]:.2f}")


def multicloud(rep, out):
    eg = {(r["scenario"], r["policy"]): r for r in csv.DictReader(open(os.path.join(out, "multicloud", "egress.csv")))}
    ov = {(r[0], r[1]): r for r in csv.reader(open(os.path.join(out, "multicloud", "overall.csv")))}
    for first, sc, base in (("Bookinfo, under half", "bookinfo", "spread:0.2"), ("Online Boutique, under half", "online-boutique", "spread:0.2")):
        a, b = eg[sc, "multicloud"], eg[sc, base]
        m, lo, hi = unpaired(float(a["mean_s"]), float(a["mean_ci95"]), float(b["mean_s"]), float(b["mean_ci95"]))
        rep.margin("multicloud", first, "`" + base + "`", m, lo, hi)
    a, b = ov["online-boutique", "multicloud"], eg["online-boutique", "spread:0.3"]
    m, lo, hi = unpaired(float(a[2]), float(a[3]), float(b["mean_s"]), float(b["mean_ci95"]))
    rep.margin("multicloud", "Online Boutique, no budget", "`spread:0.3`", m, lo, hi)


def edge(rep, out):
    g = {(r["policy"], r["days_later"]): r for r in csv.DictReader(open(os.path.join(out, "edge", "generalisation.csv")))}
    for first, later in (("the day after", "0"), ("a week later", "7"), ("a month later", "30")):
        a, b = g["mappo-mix", later], g["greedy", later]
        m, lo, hi = unpaired(float(a["mean_time_s"]), float(a["mean_time_s_ci95"]), float(b["mean_time_s"]), float(b["mean_time_s_ci95"]))
        rep.margin("edge", first, "greedy", m, lo, hi)


WORKFLOWS = (("Sequential", "faas-sequential"), ("Parallel", "faas-parallel"), ("Branch", "faas-branch"),
             ("TcktApp", "faas-ticket-search"))


def faasconf(rep, out):
    # Served: p99 and success against the workflow's own configuration, and the cost ratio,
    # each compared at the precision the page states it.
    for name, wf in WORKFLOWS:
        by = {r["policy"].split(":")[0]: r for r in csv.DictReader(open(os.path.join(out, "faasconf", "served", wf, "summary.csv")))}
        f, st = by["faasconf"], by["static"]
        r = row("faasconf", name + ", served", "`static`")
        stated = f"{r[3]} | {r[4]} | {r[6]}"
        nums = [re.findall(r"\d+(?:\.\d+)?", c) for c in (r[3], r[4])]
        measured, ok = [], True
        for (stated_nums, x) in ((nums[0], f), (nums[1], st)):
            p99, succ = float(x["p99_s"]), float(x["success_pct"])
            m99, msucc = f"{p99:.{decimals(stated_nums[0])}f}", f"{succ:.{decimals(stated_nums[1])}f}"
            ok = ok and m99 == stated_nums[0] and float(msucc) == float(stated_nums[1])
            measured.append(f"{m99} s; {msucc}%")
        ratio = f"{float(f['cost']) / float(st['cost']):.2f}"
        ok = ok and ratio == r[6]
        rep.value("faasconf", name + ", served", "`static`", stated, " | ".join(measured + [ratio]), ok, "p99; success | cost ratio")
    # Tuning: the mean gap to the cheapest of the four baselines over the levels.
    gaps = {g["Scenario"]: g for g in json.load(open(os.path.join(out, "faasconf", "effectiveness", "effectiveness.json")))["gaps"]}
    for name, wf in WORKFLOWS:
        r = row("faasconf", name + ", tuning", "")
        stated = re.match(r"[+−-]?\d+(?:\.\d+)?%", r[5]).group(0).lstrip("+")
        measured = f"{100 * gaps[wf]['VsBaseline']:+.1f}%".replace("-", "−")
        rep.value("faasconf", name + ", tuning", r[1], stated, measured, measured.lstrip("+") == stated,
                  f"{gaps[wf]['BaselineLevels']} levels")
    rows = {r["method"]: r for r in json.load(open(os.path.join(out, "faasconf", "adaptability", "adaptability.json")))["rows"]}
    f = rows["faasconf"]["violations"]
    for base, second in (("firm", "FIRM-like"), ("rambo", "RAMBO-like")):
        b = rows[base]["violations"]
        m, lo, hi = unpaired(f["mean"], f["ci95"], b["mean"], b["ci95"])
        price = rows["faasconf"]["price_per_hour"]["mean"] / rows[base]["price_per_hour"]["mean"]
        rep.margin("faasconf", "moving load", second, m, lo, hi, f"price ratio {price:.2f}")


SECTIONS = {"lb-sim": lb_sim, "lb-testbed": lb_testbed, "lb-production": lb_production, "drpc": drpc,
            "multicloud": multicloud, "edge": edge, "faasconf": faasconf}

if __name__ == "__main__":
    section, out = sys.argv[1], sys.argv[2]
    rep = Report(out)
    SECTIONS[section](rep, out)
    rep.close()
