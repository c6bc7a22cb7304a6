"""SimPy 3 side of Shoal's peer benchmark: the M/M/1 queue.

Poisson arrivals at rate LAMBDA, exponential service of mean 1/MU, one FCFS
server (the M/M/1 mean response time is 1/(MU - LAMBDA) whatever the order of
service, so it matches Shoal's processor-sharing instance). Each run has a
horizon (arrivals stop), a warm-up (horizon/20: earlier arrivals are not
measured) and then drains every request, as Shoal's runs do. Run i uses
random.Random(seed + i).

Two implementations, both idiomatic SimPy 3:
  --style process   (default) one server process pulling from a deque, woken
                    by an event when a request arrives to an idle server:
                    two timeouts per request, the fastest we know in SimPy.
  --style resource  the textbook model: one process per customer that
                    requests a simpy.Resource(capacity=1).

Prints one JSON object: mean response time (mean over seeds of each run's
mean), requests simulated, the wall time (time.perf_counter) and CPU time
(time.process_time) of the runs, and simulated requests per CPU second
(requests_per_s) and per wall second. CPU time is the measure that survives
a machine shared with other work.
"""
import argparse
import collections
import json
import math
import random
import sys
import time

import simpy

LAMBDA = 8.0  # arrivals per second
MU = 10.0  # services per second


def run_process_style(env, rng, horizon, warmup, stats):
    """Arrival generator plus one server process with a FIFO deque."""
    queue = collections.deque()
    server = {"wake": None}
    expo = rng.expovariate

    def arrivals():
        while True:
            yield env.timeout(expo(LAMBDA))
            now = env.now
            if now >= horizon:
                return
            queue.append(now)
            stats[0] += 1
            wake = server["wake"]
            if wake is not None:
                server["wake"] = None
                wake.succeed()

    def serve():
        while True:
            if not queue:
                server["wake"] = env.event()
                yield server["wake"]
            t0 = queue.popleft()
            yield env.timeout(expo(MU))
            if t0 >= warmup:
                stats[1] += 1
                stats[2] += env.now - t0

    env.process(arrivals())
    env.process(serve())


def run_resource_style(env, rng, horizon, warmup, stats):
    """The textbook model: a process per customer and a Resource."""
    res = simpy.Resource(env, capacity=1)
    expo = rng.expovariate

    def customer(t0):
        with res.request() as req:
            yield req
            yield env.timeout(expo(MU))
        if t0 >= warmup:
            stats[1] += 1
            stats[2] += env.now - t0

    def arrivals():
        while True:
            yield env.timeout(expo(LAMBDA))
            now = env.now
            if now >= horizon:
                return
            stats[0] += 1
            env.process(customer(now))

    env.process(arrivals())


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=float, default=3600.0, help="simulated seconds of arrivals per run")
    ap.add_argument("--seeds", type=int, default=5, help="number of runs")
    ap.add_argument("--seed", type=int, default=1, help="first seed")
    ap.add_argument("--style", choices=["process", "resource"], default="process")
    a = ap.parse_args(argv)
    build = run_process_style if a.style == "process" else run_resource_style
    warmup = a.horizon / 20
    means, requests, measured, wall, cpu = [], 0, 0, 0.0, 0.0
    for i in range(a.seeds):
        rng = random.Random(a.seed + i)
        stats = [0, 0, 0.0]  # arrivals, measured completions, sum of their response times
        t0, c0 = time.perf_counter(), time.process_time()
        env = simpy.Environment()
        build(env, rng, a.horizon, warmup, stats)
        env.run()  # until no events remain: arrivals stopped and all drained
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        requests += stats[0]
        measured += stats[1]
        means.append(stats[2] / stats[1])
    n = len(means)
    mean = sum(means) / n
    se = math.sqrt(sum((m - mean) ** 2 for m in means) / (n - 1) / n) if n > 1 else 0.0
    json.dump({
        "model": "mm1", "style": a.style, "horizon_s": a.horizon, "warmup_s": warmup,
        "seeds": a.seeds, "seed": a.seed, "mean_response_s": mean, "seed_means_s": means,
        "stderr_s": se, "theory_s": 1 / (MU - LAMBDA), "requests": requests, "measured": measured,
        "wall_s": wall, "cpu_s": cpu,
        "requests_per_s": requests / cpu, "requests_per_wall_s": requests / wall,
        "simpy": simpy.__version__, "python": sys.version.split()[0],
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
