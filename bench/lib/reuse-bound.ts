// The most prefix reuse any gateway can reach over one agent loop when it shortens the loop only from its
// oldest end: results masked oldest first (what "no needless masking" asks: never a result masked while
// an older one is whole), whole steps dropped or summarized oldest first, and at least the newest result
// sent. Found by dynamic programming over every schedule of masking and dropping, so it says what the
// loop's sizes allow, whatever the policy. Left free, it counts schedules no gateway should follow: every
// result masked but the newest, those of the step the model has not seen yet included. With the newest
// step sent whole (as the gateway sends it, unless even it alone does not fit), it is the bound of any
// gateway that does so. The fidelity bench prints both beside what the gateway reached.

/** One agent loop as its prompts grow: token counts as the provider counts them. */
export interface LoopShape {
  /** The prompt before the first step: priming, system prompt and the user's task. */
  base: number;
  /** Each step as sent: its assistant message (the calls), and each result whole and masked. */
  steps: Array<{ call: number; results: Array<{ whole: number; masked: number }> }>;
  /** What a prompt may use. */
  usable: number;
}

/**
 * The mean, over requests 2…n of the loop, of the largest share (in tokens) of each prompt that can repeat
 * the prompt before it (request k holds steps 1…k−1, its newest result whole). Removing a whole step
 * changes the prompt right after its base (a notice or a summary stands there); masking a result, or
 * giving one back, changes it at that result.
 */
export function oldestFirstReuseBound(loop: LoopShape, options: { newestStepWhole?: boolean } = {}): number {
  const { base, usable } = loop;
  // A result too big for the window alone (its step's other results masked) counts as cut to fit it.
  const steps = loop.steps.map((step) => {
    const allMasked = step.results.reduce((sum, result) => sum + result.masked, 0);
    return {
      call: step.call,
      results: step.results.map((result) => {
        const room = Math.max(0, usable - base - step.call - (allMasked - result.masked));
        return { whole: Math.min(result.whole, room), masked: Math.min(result.masked, room) };
      }),
    };
  });
  // Prefix sums: calls by step, results (masked and whole) in order, and each step's first result.
  const calls = [0];
  const first = [0];
  const masked = [0];
  const whole = [0];
  const stepOf: number[] = [];
  for (const [index, step] of steps.entries()) {
    calls.push((calls.at(-1) as number) + step.call);
    for (const result of step.results) {
      masked.push((masked.at(-1) as number) + result.masked);
      whole.push((whole.at(-1) as number) + result.whole);
      stepOf.push(index);
    }
    first.push((first.at(-1) as number) + step.results.length);
  }
  const at = (sums: number[], index: number) => sums[index] as number;
  /** Tokens of the prompt holding `held` steps, `dropped` of them removed, results before `maskedUntil` masked. */
  const tokens = (held: number, dropped: number, maskedUntil: number) =>
    base +
    at(calls, held) -
    at(calls, dropped) +
    at(masked, maskedUntil) -
    at(masked, at(first, dropped)) +
    at(whole, at(first, held)) -
    at(whole, maskedUntil);
  /** Tokens before result `index` (its step's call included) when the results before it are masked. */
  const before = (dropped: number, index: number) =>
    base +
    at(calls, (stepOf[index] as number) + 1) -
    at(calls, dropped) +
    at(masked, index) -
    at(masked, at(first, dropped));
  // best.get(dropped)[maskedUntil − first(dropped)]: the largest sum of shares reaching that state.
  let best = new Map<number, number[]>([[0, [0]]]);
  for (let held = 1; held <= steps.length; held++) {
    const previous = best;
    const previousMax = Math.max(...[...previous.values()].flat());
    best = new Map();
    // Masking reaches every result but the newest; with the newest step whole, none of that step's while
    // it fits beside the base, every older step dropped.
    const newestWhole =
      options.newestStepWhole === true && tokens(held, held - 1, at(first, held - 1)) <= usable;
    const maskable = newestWhole ? at(first, held - 1) : Math.max(0, at(first, held) - 1);
    for (let dropped = 0; dropped < held; dropped++) {
      const row: number[] = [];
      const sameDropped = previous.get(dropped);
      for (let maskedUntil = at(first, dropped); maskedUntil <= maskable; maskedUntil++) {
        const size = tokens(held, dropped, maskedUntil);
        if (size > usable) {
          row.push(-Infinity);
          continue;
        }
        // From any state: at least the base repeats.
        let value = previousMax + base / size;
        for (const [offset, sum] of (sameDropped ?? []).entries()) {
          const previousUntil = at(first, dropped) + offset;
          const repeated =
            previousUntil === maskedUntil
              ? tokens(held - 1, dropped, maskedUntil)
              : before(dropped, Math.min(previousUntil, maskedUntil));
          value = Math.max(value, sum + Math.min(repeated, size) / size);
        }
        row.push(value);
      }
      best.set(dropped, row);
    }
  }
  return steps.length === 0 ? 1 : Math.max(...[...best.values()].flat()) / steps.length;
}
