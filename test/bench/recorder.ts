// `pnpm bench:recorder`: the recorder benchmark. The body lives in services/recorder/bench so it
// resolves the recorder's own dependencies; figures are kept in docs/benchmarks.md ("Recorder").
import '../../services/recorder/bench/recorder-bench.ts';
