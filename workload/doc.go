// Package workload generates the requests that drive a Shoal simulation: open-loop arrival
// processes (Poisson, Markov-modulated Poisson, diurnal), replay of real traces (rate series
// and recorded arrival instants), and the random variables used for request demands and sizes.
//
// Time is a time.Duration since the start of a run; rates are in requests per second; demands
// are whatever unit the caller gives them (seconds of CPU, tokens, bytes). Randomness comes only
// from the *rand.Rand passed in, so a source is deterministic for a seed.
//
// The usage loop of a simulator source is:
//
//	traces := workload.NewTraces(baseDir)       // one catalog per run; caches parsed traces
//	p, err := spec.BuildWith(loadRate, traces)  // a fresh Process per source and run
//	at, ok := p.Next(0, rng)
//	for ok && at < horizon {
//		// schedule an arrival at `at`
//		at, ok = p.Next(at, rng)
//	}
//
// A Process value carries the state of one source (the MMPP phase, the replay cursor):
// call Next with the instant it returned last (0 at the start), from one goroutine.
// Next and Dist.Sample do not allocate.
//
// Trace readers (ReadNASA, ReadWikipedia, ReadAlibaba, ReadAzureLLM) take an io.Reader and detect
// gzip by its magic bytes. The four public traces described in traces/SOURCES.md are embedded in
// the package, so a binary needs no data directory; a Traces catalog resolves a trace by name
// (nasa, wikipedia, alibaba, azure-llm) or by file path.
package workload
