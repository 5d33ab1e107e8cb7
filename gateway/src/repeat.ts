/**
 * Runs `task` at once and then `intervalMs` after each run settles, so two runs never overlap,
 * on an unref'd timer that never keeps the process alive. `stop()` cancels the next run and
 * waits for the one in flight. The config pull and the evidence push both run on it.
 */
export function repeat(task: () => Promise<unknown>, intervalMs: number): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;

  function schedule(delay: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = task().finally(() => schedule(intervalMs));
    }, delay);
    timer.unref();
  }
  schedule(0);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
