// An Anthropic Messages API that answers every request with one short message (or a tool call, below),
// reading and dropping the body: the upstream of the `agents` section, where what is measured is the gateway's own CPU per
// request (the strict fake in test/helpers counts each prompt with a tokenizer: tens of milliseconds
// for a 250 KB request, a core taken from the processes measured). Prints "READY <base url>".
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const answer = JSON.stringify({
  id: 'msg_bench',
  type: 'message',
  role: 'assistant',
  model: 'claude-bench',
  content: [{ type: 'text', text: 'Read the file; the retry loop has no backoff.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: {
    input_tokens: 60_000,
    output_tokens: 12,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  },
});
// Asked with `x-bench-tool-use` (the agents section's session case): the answer calls a tool, with an id
// of its own, which the client's next request answers.
let calls = 0;
const toolUse = () =>
  JSON.stringify({
    ...(JSON.parse(answer) as Record<string, unknown>),
    content: [
      { type: 'text', text: 'Reading the next module.' },
      { type: 'tool_use', id: `toolu_fixed_${++calls}`, name: 'Read', input: { path: `src/m${calls}.ts` } },
    ],
    stop_reason: 'tool_use',
  });
const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_bench' });
    response.end(request.headers['x-bench-tool-use'] === undefined ? answer : toolUse());
  });
});
server.listen(Number(process.env.PORT ?? '0'), '127.0.0.1', () => {
  process.stdout.write(`READY http://127.0.0.1:${(server.address() as AddressInfo).port}/v1\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
