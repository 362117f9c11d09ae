// Group commit at the application level: the calls made during one turn of the event loop
// (under load, many deliveries finish in the same turn) are handed to `run` together, as one
// statement instead of one per call, and each caller gets its own result, or the batch's
// error. A lone call waits no longer than the end of its turn (setImmediate), so batching
// costs no latency when there is nothing to batch with.
//
// With `serial`, at most one run is in flight: the calls made while it runs wait for it and
// then go together in the next (a database's group commit). Under load, batches then grow with
// the time a run takes instead of staying one turn's worth; when idle, nothing changes.
// `minIntervalMs` (serial only) spaces the runs that follow one another under load: the next
// starts about that long after the previous one started (timers keep whole milliseconds), so
// that each run's fixed cost (a transaction, its statements' parsing) is shared by more calls.
// A call that finds the batcher idle is never held back, and a full batch goes at once.

export type Batched<I, O> = (item: I) => Promise<O>;

export function createBatcher<I, O>(run: (items: I[]) => Promise<O[]>, opts: { maxItems: number; serial?: boolean; minIntervalMs?: number }): Batched<I, O> {
  const pending: Array<{ item: I; resolve: (o: O) => void; reject: (err: unknown) => void }> = [];
  let running = false;
  let scheduled = false;
  let startedAt = 0;
  let spacing: NodeJS.Timeout | undefined; // set while the next run waits for its time

  function flush(): void {
    scheduled = false;
    if (opts.serial && running) return; // the run in flight flushes when it ends
    const batch = pending.splice(0, opts.maxItems);
    if (!batch.length) return;
    running = true;
    startedAt = performance.now();
    // Through then(): a run that throws rather than rejects still settles every caller.
    Promise.resolve()
      .then(() => run(batch.map((p) => p.item)))
      .then((results) => {
        if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} gave ${results.length} results`);
        batch.forEach((p, i) => p.resolve(results[i] as O));
      })
      .catch((err: unknown) => {
        for (const p of batch) p.reject(err);
      })
      .finally(() => {
        if (!(opts.serial && pending.length)) {
          running = false;
          return;
        }
        // Still "running" while the next run waits for its time: the calls made meanwhile join it.
        const wait = (opts.minIntervalMs ?? 0) - (performance.now() - startedAt);
        if (wait > 0 && pending.length < opts.maxItems) spacing = setTimeout(next, wait);
        else next();
      });
  }

  function next(): void {
    clearTimeout(spacing);
    spacing = undefined;
    running = false;
    flush();
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      pending.push({ item, resolve, reject });
      if (pending.length >= opts.maxItems && spacing)
        next(); // a full batch shares its cost already
      else if (pending.length >= opts.maxItems && !(opts.serial && running)) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
