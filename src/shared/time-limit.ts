// One time limit for a promise that may never settle (a BullMQ call waiting for a Redis that is
// not coming, a worker's close under a job whose completion cannot be recorded, a DNS query to
// name servers that never answer). The work itself is not cancelled: callers use it where what
// it does later is harmless.

export class TimeLimitError extends Error {
  override readonly name = 'TimeLimitError';
}

/** `work`, or a TimeLimitError (`<what>: no answer within <ms> ms`) once `ms` have passed. */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeLimitError(`${what}: no answer within ${ms} ms`)), ms);
  });
  work.catch(() => undefined); // a late failure after the limit is not an unhandled rejection
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}
