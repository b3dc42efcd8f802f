// What the drivers' tools return: a page of a log, about `tokens` tokens (one per word), numbered so a
// test can tell which pages reached the model.
const words = ['alpha', 'ledger', 'orbit', 'mesa', 'quartz', 'tundra', 'vivid', 'ember', 'lotus', 'nimbus'];

export function page(number, tokens = 1_500) {
  const body = Array.from({ length: tokens }, (_unused, index) => words[(index * 3 + number) % words.length]);
  return `Page ${number}. ${body.join(' ')}`;
}

/** Prints what the driver's user saw as one JSON line; a thrown error as its class, status and message. */
export async function report(run) {
  try {
    process.stdout.write(`${JSON.stringify(await run())}\n`);
  } catch (error) {
    const status = error?.status ?? error?.statusCode ?? error?.cause?.status;
    process.stdout.write(`${JSON.stringify({ error: { kind: error?.constructor?.name, status, message: String(error?.message) } })}\n`);
  }
}
