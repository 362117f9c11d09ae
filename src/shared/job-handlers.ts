// Every queue's jobs go through a handler picked by the job's name from a typed map: a missing
// handler is a compile error (Record<JobName, Handler>), a map that does not match the names
// the queue declares is a start-up error (as immich checks its @OnJob handlers at boot), and a
// job under a name no handler knows fails for good instead of running as another. Handlers
// are thin: they call a domain service and turn its outcome into what BullMQ understands
// (`later` and `stop` below), so that no domain service imports BullMQ.
import { DelayedError, UnrecoverableError, type Job, type Processor } from 'bullmq';

/** Come back after `ms`, without spending an attempt (the work is not due yet, or its slot is busy). */
export interface Later {
  later: number;
}
/** Fail for good: retrying cannot help (the reason is the job's failure in Bull Board). */
export interface Stop {
  stop: string;
}

export type Handler<P> = (job: Job<P>) => Promise<unknown>;

export const later = (ms: number): Later => ({ later: ms });
export const stop = (reason: string): Stop => ({ stop: reason });

const isLater = (r: unknown): r is Later => typeof r === 'object' && r !== null && typeof (r as Later).later === 'number' && Object.keys(r).length === 1;
const isStop = (r: unknown): r is Stop => typeof r === 'object' && r !== null && typeof (r as Stop).stop === 'string' && Object.keys(r).length === 1;

/** The processor of `queue`: throws at once when `handlers` and `names` differ. */
export function processorFor<P, N extends string>(queue: string, names: readonly N[], handlers: Record<N, Handler<P>>): Processor<P, unknown, N> {
  const declared = [...new Set(names)].sort();
  const given = Object.keys(handlers).sort();
  if (declared.join('\n') !== given.join('\n')) {
    throw new Error(`queue ${queue}: handlers for [${given.join(', ')}] but job names [${declared.join(', ')}]`);
  }
  return async (job, token) => {
    if (!Object.hasOwn(handlers, job.name)) throw new UnrecoverableError(`queue ${queue} has no handler for job name "${job.name}"`);
    const result = await handlers[job.name](job);
    if (isLater(result)) {
      await job.moveToDelayed(Date.now() + result.later, token);
      throw new DelayedError();
    }
    if (isStop(result)) throw new UnrecoverableError(result.stop);
    return result;
  };
}
