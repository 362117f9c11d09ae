// The largest envelope verified (bigger ones get a verdict without being read): the verifier's
// default, and what the signature worker reads into memory at most. Its own module, so that the
// worker's main thread knows it without loading the verifier (which runs on worker threads).
export const MAX_ENVELOPE_BYTES = 64 * 1024 * 1024;
