// The log's heartbeat in the notarization worker: a tick every LOG_CHECKPOINT_INTERVAL_MS
// (appends what waits, publishes a checkpoint when the log grew, asks the witnesses), on a timer
// of its own rather than a queue's job: the log needs the database and the store, not Redis. A
// failed tick is logged and the next one tries again; ticks never overlap, and come at a fixed
// rate (a slow one is followed at once by the next).
import type { Logger } from '../shared/logger.js';
import type { LogService } from './log.service.js';

export function startLogTicks(service: Pick<LogService, 'tick'>, everyMs: number, logger: Logger): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let failures = 0;
  const tick = async () => {
    try {
      await service.tick();
      if (failures) logger.info({ after: failures }, 'the transparency log ticks again');
      failures = 0;
    } catch (err) {
      // Once per outage, then every minute or so: a store or database away for a while is one story.
      if (failures++ % Math.max(1, Math.round(60_000 / everyMs)) === 0) logger.warn({ err: (err as Error).message }, 'a transparency log tick failed');
    }
  };
  // At a fixed rate: the next tick is due everyMs after the last one started (at once if it took longer).
  let due = Date.now() + everyMs;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        due = Math.max(due + everyMs, Date.now());
        running = tick().finally(schedule);
      },
      Math.max(0, due - Date.now()),
    );
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
