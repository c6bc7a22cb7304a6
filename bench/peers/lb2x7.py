"""SimPy 3 side of Shoal's peer benchmark: 2 load balancers x 7 servers.

The Distr-LB moderate setup as Shoal's embedded scenario lb-moderate-cpu has
it: 7 servers with 1, 1, 2, 2, 2, 4, 4 cores, each serving its requests by
processor sharing of its cores (with n requests on c cores each runs at
min(1, c/n) core), exponential demands of mean 1 core-second, and a Poisson
stream of LOAD * 16 = 13.6 req/s split evenly between two LB points. Each LB
sends a request to the server with the fewest of its OWN requests in flight
(LSQ with a local view), ties broken uniformly at random.

Processor sharing in SimPy: every server is one process that sleeps until
the next completion (env.timeout) and is interrupted when a request arrives,
so it recomputes the next completion on every arrival and departure. Like
Shoal, it keeps the attained service v of a job present throughout; a job's
finish tag is v at arrival plus its demand, and the next completion is the
smallest tag (a heap), at (tag - v) / rate.

Each run has a horizon (arrivals stop), a warm-up (horizon/20: earlier
arrivals are not measured), and then drains every request. Run i uses
random.Random(seed + i). It prints one JSON object like mm1.py's: mean
response time, requests simulated, wall and CPU time of the runs, simulated
requests per CPU second (requests_per_s) and per wall second.

--check runs the same PS server alone against queueing theory instead:
M/M/1-PS (1 core, lambda 8/s, mean demand 0.1 s: mean response
1/(mu - lambda) = 0.5 s) for --horizon, and M/M/4-PS (4 cores, lambda 32/s,
mean demand 0.1 s, for --horizon/4 so it has as many requests: with
exponential demands the number in system is that of M/M/4, so the mean
response is Erlang C's W = C(4, a) / (4 mu - lambda) + 1/mu = 0.1746 s); it
exits non-zero if a mean is off by more than --check-tol.
"""
import argparse
import heapq
import json
import math
import random
import sys
import time

import simpy

CORES = (1, 1, 2, 2, 2, 4, 4)
LBS = 2
LOAD = 0.85
DEMAND = 1.0  # mean core-seconds per request


class PSServer:
    """A processor-sharing server of `cores` cores driven by one process."""

    __slots__ = ("env", "cores", "v", "last", "jobs", "seq", "done", "proc")

    def __init__(self, env, cores, done):
        self.env = env
        self.cores = float(cores)
        self.v = 0.0  # attained service of a job present throughout, core-seconds
        self.last = 0.0  # time v was last advanced to
        self.jobs = []  # heap of (finish tag, sequence, job)
        self.seq = 0
        self.done = done  # called with the job when it completes
        self.proc = env.process(self.run())

    def rate(self):
        n = len(self.jobs)
        return 1.0 if n <= self.cores else self.cores / n

    def advance(self, now):
        if self.jobs:
            self.v += self.rate() * (now - self.last)
        self.last = now

    def add(self, job, work):
        """Admits job with `work` core-seconds and wakes the server process."""
        self.advance(self.env.now)
        self.seq += 1
        heapq.heappush(self.jobs, (self.v + work, self.seq, job))
        self.proc.interrupt()

    def run(self):
        env = self.env
        jobs = self.jobs
        while True:
            if jobs:
                dt = (jobs[0][0] - self.v) / self.rate()
                wait = env.timeout(dt if dt > 0 else 0.0)
            else:
                wait = env.event()  # idle until interrupted by an arrival
            try:
                yield wait
            except simpy.Interrupt:
                continue  # a job arrived: recompute the next completion
            # The head job's work is done: every change since the timeout was
            # set would have interrupted us.
            self.advance(env.now)
            _, _, job = heapq.heappop(jobs)
            if not jobs:
                self.v = 0.0  # tags are relative to v: restart from 0
            self.done(job)


def run_lb2x7(env, rng, horizon, warmup, stats):
    """Builds the 2 x 7 model in env; stats = [arrivals, measured, sum]."""
    rate = LOAD * sum(CORES) / DEMAND / LBS  # req/s per LB
    n = len(CORES)
    inflight = [[0] * n for _ in range(LBS)]  # each LB's own view

    def done(job):
        t0, lb, j = job
        inflight[lb][j] -= 1
        if t0 >= warmup:
            stats[1] += 1
            stats[2] += env.now - t0

    servers = [PSServer(env, c, done) for c in CORES]
    expo = rng.expovariate
    randrange = rng.randrange

    def arrivals(lb):
        q = inflight[lb]
        while True:
            yield env.timeout(expo(rate))
            now = env.now
            if now >= horizon:
                return
            stats[0] += 1
            # LSQ on this LB's own counts, ties uniformly at random.
            best = min(q)
            ties = [j for j in range(n) if q[j] == best]
            j = ties[0] if len(ties) == 1 else ties[randrange(len(ties))]
            q[j] += 1
            servers[j].add((now, lb, j), expo(1.0 / DEMAND))

    for lb in range(LBS):
        env.process(arrivals(lb))


def run_single(cores, lam, mean_demand):
    """Returns a builder of one PS server fed by Poisson(lam) arrivals."""

    def build(env, rng, horizon, warmup, stats):
        def done(t0):
            if t0 >= warmup:
                stats[1] += 1
                stats[2] += env.now - t0

        server = PSServer(env, cores, done)
        expo = rng.expovariate

        def arrivals():
            while True:
                yield env.timeout(expo(lam))
                now = env.now
                if now >= horizon:
                    return
                stats[0] += 1
                server.add(now, expo(1.0 / mean_demand))

        env.process(arrivals())

    return build


def erlang_c_response(c, lam, mu):
    """Mean response time of M/M/c (and of c-server PS with exp. demands)."""
    a = lam / mu
    rho = a / c
    s = sum(a ** k / math.factorial(k) for k in range(c))
    top = a ** c / math.factorial(c) / (1 - rho)
    pwait = top / (s + top)
    return pwait / (c * mu - lam) + 1 / mu


def simulate(build, horizon, seeds, seed):
    warmup = horizon / 20
    means, requests, measured, wall, cpu = [], 0, 0, 0.0, 0.0
    for i in range(seeds):
        rng = random.Random(seed + i)
        stats = [0, 0, 0.0]
        t0, c0 = time.perf_counter(), time.process_time()
        env = simpy.Environment()
        build(env, rng, horizon, warmup, stats)
        env.run()  # until no events remain: arrivals stopped and all drained
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        requests += stats[0]
        measured += stats[1]
        means.append(stats[2] / stats[1])
    n = len(means)
    mean = sum(means) / n
    se = math.sqrt(sum((m - mean) ** 2 for m in means) / (n - 1) / n) if n > 1 else 0.0
    return {
        "horizon_s": horizon, "warmup_s": warmup, "seeds": seeds, "seed": seed,
        "mean_response_s": mean, "seed_means_s": means, "stderr_s": se,
        "requests": requests, "measured": measured, "wall_s": wall, "cpu_s": cpu,
        "requests_per_s": requests / cpu, "requests_per_wall_s": requests / wall,
        "simpy": simpy.__version__, "python": sys.version.split()[0],
    }


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=float, default=1800.0, help="simulated seconds of arrivals per run")
    ap.add_argument("--seeds", type=int, default=5, help="number of runs")
    ap.add_argument("--seed", type=int, default=1, help="first seed")
    ap.add_argument("--check", action="store_true", help="check the PS server against M/M/1-PS and M/M/4-PS theory")
    ap.add_argument("--check-tol", type=float, default=0.05, help="relative tolerance of --check")
    a = ap.parse_args(argv)
    if not a.check:
        out = {"model": "lb2x7"}
        out.update(simulate(run_lb2x7, a.horizon, a.seeds, a.seed))
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        return 0
    ok = True
    cases = [
        ("M/M/1-PS", 1, 8.0, 0.1, a.horizon, 1 / (10.0 - 8.0)),
        ("M/M/4-PS", 4, 32.0, 0.1, a.horizon / 4, erlang_c_response(4, 32.0, 10.0)),
    ]
    for name, cores, lam, demand, horizon, theory in cases:
        r = simulate(run_single(cores, lam, demand), horizon, a.seeds, a.seed)
        rel = (r["mean_response_s"] - theory) / theory
        good = abs(rel) <= a.check_tol
        ok = ok and good
        print("PS check %s: %d core(s), lambda %g/s, mean demand %g s, %d seeds x %g s: SimPy %.4f s (se %.4f), theory %.4f s, diff %+.2f%% %s"
              % (name, cores, lam, demand, a.seeds, horizon, r["mean_response_s"], r["stderr_s"], theory, 100 * rel,
                 "ok" if good else "FAIL (tolerance %.0f%%)" % (100 * a.check_tol)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
