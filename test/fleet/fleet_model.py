#!/usr/bin/env python3
"""A deterministic model of a fleet's driver registrations through an API server fault.

N nodes x D drivers each begin a registration in the first seconds of a fault (every kubelet or
every registrar of the fleet restarted by one event: a node image rolled out, a control-plane
outage that outlasted the registrars' pods), and keep trying until the API server answers. The
fault is an outage (nothing reaches the API server) or a brownout (the API server answers every
request of kubelet's with 429, as priority and fairness does when its queues are full). Each
policy is one way the registrar and kubelet retry; the model counts, second by second, kubelet's
registration attempts and the requests that reach the API server, and when each driver is
registered again.

    python3 test/fleet/fleet_model.py                 # the doc's table (docs/fleet-model.md)
    python3 test/fleet/fleet_model.py --series ours   # and one policy's figures minute by minute

Its constants are kubelet's and the API server's (read in v1.26.15, v1.36.3 and v1.37.2 of
k8s.io/kubernetes and v0.37.2 of its staging modules):
  - kubelet's per-socket retry back-off: 500 ms doubling to 2 min 2 s
    (pkg/util/goroutinemap/exponentialbackoff); its reconciler runs once a second
    (pluginmanager/plugin_manager.go loopSleepDuration), so a retry waits up to 1 s more;
  - an attempt that gets to the API server: InstallCSIDriver reads and writes the Node, then the
    CSINode (volume/csi/nodeinfomanager/nodeinfomanager.go): 4 requests when the server answers;
    when every request fails, updateNode gives up after its 4 tries (updateBackoff), having sent
    4 GETs; client-go repeats a request answered 429 with Retry-After up to 10 times
    (rest/request.go maxRetries, with_retry.go checkWait), priority and fairness sends
    Retry-After: 1 at least (apiserver flowcontrol dropped_requests_tracker.go), so in the
    brownout each try is 11 requests over 10 s or more: 44 requests and 40 s an attempt;
  - kubelets before v1.36 deregister a plugin whose registration failed when its socket is
    deleted (UninstallCSIDriver: the CSINode first, 4 tries, 44 requests in the brownout);
  - the Go registrar exits on every refusal and kubelet restarts it after its crash-loop
    back-off, 10 s doubling to 5 min (pkg/kubelet/kubelet.go backOffPeriod, MaxContainerBackOff);
    its socket stays behind, and kubelet v1.36+ keeps trying it on the path's back-off (a failed
    dial, no request to the API server);
  - the registrar of release 1.2.0 offered its socket under a new name 3 s and 7 s after the
    first refusal and every 8 s from then on, each new name tried at once;
  - this registrar withdraws its socket after a transient refusal and serves it again after
    kubelet's back-off gap at that moment plus a random part of up to 2 min 2 s
    (registrar/registration_lifecycle.h).
"""
import argparse
import math
import random
import sys

BACKOFF_INITIAL = 0.5
BACKOFF_CAP = 122.0
RECONCILE = 1.0
REQUESTS_OK = 4
BROWNOUT_REQUESTS = 44
BROWNOUT_SECONDS = 40.0
CRASH_INITIAL = 10.0
CRASH_CAP = 300.0
START_SPREAD = 10.0  # the fleet's registrations begin within the fault's first 10 s
HORIZON_AFTER = 1500.0  # seconds simulated after the API server's return

POLICIES = {
    "kubelet": "kubelet v1.36+ alone: the registrar keeps serving, kubelet retries on its back-off",
    "go": "Go registrar v2.17.0 on kubelet v1.36+: exits on each refusal, crash-loop back-off",
    "go-v1.26": "Go registrar v2.17.0 on kubelet v1.26-v1.35",
    "1.2.0": "this registrar, release 1.2.0, on kubelet v1.36+: a new socket name every 8 s",
    "ours": "this registrar on kubelet v1.36+: withdrawn, offered again after the jittered back-off",
    "ours-v1.26": "this registrar on kubelet v1.26-v1.35",
}


def kubelet_gap_at(elapsed, cap=BACKOFF_CAP):
    """kubelet's back-off gap in force `elapsed` seconds after the first failure."""
    at, gap = 0.0, min(BACKOFF_INITIAL, cap)
    while at + gap <= elapsed and gap < cap:
        at += gap
        gap = min(gap * 2, cap)
    return gap


def kubelet_attempts_by(t, cap=BACKOFF_CAP):
    """Attempts kubelet's back-off on one path makes in [0, t], the first failure at 0."""
    if t < 0:
        return 0
    attempts, at, gap = 1, 0.0, min(BACKOFF_INITIAL, cap)
    while at + gap <= t:
        at += gap
        attempts += 1
        gap = min(gap * 2, cap)
    return attempts


def ours_wait(elapsed, u, cap=BACKOFF_CAP):
    """This registrar's wait after a refusal `elapsed` seconds after the first one."""
    return kubelet_gap_at(elapsed, cap) + cap * u


class Fault:
    def __init__(self, kind, minutes):
        self.kind = kind  # "outage" or "brownout"
        self.end = minutes * 60.0

    def answers(self, t):
        return t >= self.end

    def failed_attempt(self):
        """(requests reaching the API server, seconds) of an attempt made during the fault."""
        if self.kind == "brownout":
            return BROWNOUT_REQUESTS, BROWNOUT_SECONDS
        return 0, 0.0


class Registration:
    """One driver on one node: kubelet's attempts (time, requests), and when it registered."""

    def __init__(self):
        self.attempts = []  # (time, requests, seconds the requests are spread over)
        self.extra_requests = []  # the same, not part of an attempt: deregistrations
        self.registered_at = None


def next_backoff(b):
    return BACKOFF_INITIAL if b == 0 else min(b * 2, BACKOFF_CAP)


def attempt(reg, fault, t):
    """kubelet tries at t: returns (succeeded, when the verdict came)."""
    if fault.answers(t):
        reg.attempts.append((t, REQUESTS_OK, 0.0))
        reg.registered_at = t
        return True, t
    requests, seconds = fault.failed_attempt()
    reg.attempts.append((t, requests, seconds))
    return False, t + seconds


def simulate(policy, fault, rng, horizon):
    reg = Registration()
    t = rng.uniform(0, START_SPREAD)
    b = 0.0  # kubelet's back-off on the socket's path
    if policy == "kubelet":
        while t < horizon:
            ok, done = attempt(reg, fault, t)
            if ok:
                break
            b = next_backoff(b)
            t = done + b + rng.uniform(0, RECONCILE)
    elif policy in ("ours", "ours-v1.26"):
        first = None
        while t < horizon:
            ok, done = attempt(reg, fault, t)
            if ok:
                break
            b = next_backoff(b)
            if first is None:
                first = done
            wait = ours_wait(done - first, rng.random())
            if policy == "ours-v1.26" and fault.kind == "brownout":
                # The withdrawal deregisters the failed plugin: UninstallCSIDriver.
                reg.extra_requests.append((done, BROWNOUT_REQUESTS, BROWNOUT_SECONDS))
            served = done + wait
            # kubelet tries it at its next pass once its own back-off, never longer, has run out.
            t = max(served, done + b) + rng.uniform(0, RECONCILE)
    elif policy == "1.2.0":
        ok, done = attempt(reg, fault, t)
        offers = [3.0, 7.0]
        first = done
        k = 0
        while not ok and t < horizon:
            # kubelet's own retry of the first path, then the new names.
            if k == 0:
                t = done + BACKOFF_INITIAL + rng.uniform(0, RECONCILE)
            else:
                at = offers[k - 1] if k - 1 < len(offers) else offers[-1] + 8.0 * (k - len(offers))
                t = max(first + at, done) + rng.uniform(0, 0.1)
            k += 1
            ok, done = attempt(reg, fault, t)
    elif policy in ("go", "go-v1.26"):
        restarts = 0
        up = True  # the Go registrar runs
        restart_at = None
        kubelet_next = t + rng.uniform(0, RECONCILE)
        while t < horizon:
            if policy == "go":
                # kubelet tries the path on its back-off, the registrar there or not; the
                # registrar's restart (a new socket) does not shorten it.
                t = kubelet_next
                if not up and restart_at is not None and restart_at <= t:
                    up = True
                if not up:
                    reg.attempts.append((t, 0, 0.0))  # the dial fails
                    b = next_backoff(b)
                    kubelet_next = t + b + rng.uniform(0, RECONCILE)
                    continue
                ok, done = attempt(reg, fault, t)
                if ok:
                    break
                b = next_backoff(b)
                kubelet_next = done + b + rng.uniform(0, RECONCILE)
            else:
                # Before v1.36 the failed plugin is never tried again until the registrar's
                # restart makes its socket anew (and kubelet deregisters the failed one).
                ok, done = attempt(reg, fault, t)
                if ok:
                    break
                b = next_backoff(b)
            up = False
            delay = min(CRASH_INITIAL * 2 ** restarts, CRASH_CAP)
            restarts += 1
            restart_at = done + delay + 1.0  # the container starts in about a second
            if policy == "go-v1.26":
                if fault.kind == "brownout":
                    reg.extra_requests.append((restart_at, BROWNOUT_REQUESTS, BROWNOUT_SECONDS))
                t = max(restart_at, done + b) + rng.uniform(0, RECONCILE)
                up = True
    else:
        raise ValueError(policy)
    return reg


class Figures:
    def __init__(self, policy, fault, nodes, drivers, regs):
        self.policy, self.fault, self.nodes, self.drivers = policy, fault, nodes, drivers
        end = fault.end
        horizon = int(end + HORIZON_AFTER) + 1
        self.attempts = [0] * horizon
        self.requests = [0] * horizon
        for reg in regs:
            for when, _, _ in reg.attempts:
                if 0 <= when < horizon:
                    self.attempts[int(when)] += 1
            for when, requests, seconds in reg.attempts + reg.extra_requests:
                # A failed attempt's requests are spread over the seconds it takes.
                span = max(1, int(seconds))
                for i in range(span):
                    if 0 <= int(when) + i < horizon:
                        self.requests[int(when) + i] += requests / span
        n = len(regs)
        after = [reg.attempts for reg in regs]
        self.registered = sum(1 for reg in regs if reg.registered_at is not None)
        self.all_registered_after = (
            max(reg.registered_at for reg in regs) - end if self.registered == n else None)
        # Per driver per node, in each whole minute of the fault: the fleet's mean.
        minutes = int(math.ceil(end / 60.0))
        self.per_minute = [sum(self.attempts[m * 60:(m + 1) * 60]) / n for m in range(minutes)]
        self.peak_attempts_after = max(self.attempts[int(end):])
        self.peak_requests = max(self.requests)
        # How the fleet's first attempts after the return are spread: the seconds holding the
        # middle 90% of them.
        firsts = sorted(next((w for w, _, _ in a if w >= end), math.inf) for a in after)
        firsts = [f for f in firsts if f != math.inf]
        if len(firsts) >= 20:
            lo, hi = firsts[int(0.05 * len(firsts))], firsts[int(0.95 * len(firsts)) - 1]
            self.spread = hi - lo
        else:
            self.spread = None
        # The yardstick: no registration made kubelet try more often than its back-off on one
        # path would have, counted from that registration's first attempt.
        self.outpaced = 0
        for a in after:
            times = [w for w, _, _ in a]
            for i, w in enumerate(times):
                if i + 1 > kubelet_attempts_by(w - times[0]):
                    self.outpaced += 1
                    break


def run(policy, kind, minutes, nodes, drivers, seed=1):
    fault = Fault(kind, minutes)
    rng = random.Random(f"{seed}:{policy}:{kind}:{minutes}:{nodes}:{drivers}")
    horizon = fault.end + HORIZON_AFTER
    regs = [simulate(policy, fault, rng, horizon) for _ in range(nodes * drivers)]
    return Figures(policy, fault, nodes, drivers, regs)


SCENARIOS = [("outage", 1), ("outage", 3), ("outage", 6), ("outage", 30), ("brownout", 3)]


def fmt(x, digits=1):
    if x is None:
        return "never"
    return f"{x:.{digits}f}"


def table(nodes_list, drivers, policies, out):
    out.write("| fleet | fault | policy | attempts per driver per node per minute, highest minute "
              "of the fault | peak attempts/s after the return | peak API requests/s | spread of "
              "the first attempts after the return (middle 90%, s) | every driver registered "
              "after the return (s) | registrations that outpaced kubelet's back-off |\n")
    out.write("|---|---|---|---|---|---|---|---|---|\n")
    for nodes in nodes_list:
        for kind, minutes in SCENARIOS:
            for policy in policies:
                f = run(policy, kind, minutes, nodes, drivers)
                out.write(
                    f"| {nodes} x {drivers} | {kind} {minutes} min | {policy} | "
                    f"{fmt(max(f.per_minute), 2)} | {f.peak_attempts_after} | "
                    f"{f.peak_requests:.0f} | {fmt(f.spread, 0)} | "
                    f"{fmt(f.all_registered_after, 0)} | {f.outpaced} |\n")
                out.flush()


def series(policy, kind, minutes, nodes, drivers, out):
    f = run(policy, kind, minutes, nodes, drivers)
    out.write(f"{policy}, {kind} {minutes} min, {nodes} x {drivers}: per minute from the fault's "
              "start: attempts/s (mean, peak), API requests/s (mean, peak)\n")
    for m in range(0, len(f.attempts) // 60):
        a = f.attempts[m * 60:(m + 1) * 60]
        r = f.requests[m * 60:(m + 1) * 60]
        if m * 60 > f.fault.end + 600 and not any(a):
            break
        out.write(f"  minute {m:3d}: {sum(a) / 60:8.1f} {max(a):6d}   "
                  f"{sum(r) / 60:9.1f} {max(r):7.0f}\n")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000")
    parser.add_argument("--drivers", type=int, default=3)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--series", help="also print this policy's figures minute by minute")
    parser.add_argument("--fault", default="outage:3", help="for --series: KIND:MINUTES")
    args = parser.parse_args(argv)
    policies = args.policies.split(",")
    for p in policies:
        if p not in POLICIES:
            parser.error(f"unknown policy {p!r}; one of {', '.join(POLICIES)}")
    for p in policies:
        sys.stdout.write(f"- {p}: {POLICIES[p]}\n")
    table([int(n) for n in args.nodes.split(",")], args.drivers, policies, sys.stdout)
    if args.series:
        kind, minutes = args.fault.split(":")
        series(args.series, kind, float(minutes), max(int(n) for n in args.nodes.split(",")),
               args.drivers, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
