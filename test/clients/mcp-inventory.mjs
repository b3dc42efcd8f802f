// A stdio MCP server (JSON-RPC, one message a line) of 40 inventory tools, `lookup_<kind>` for kinds 0 to
// 39: more than an agent shows its model at once. Codex and Claude Code defer such tools behind their tool
// search. A call answers `record <id> of kind <kind>: ACME-<id>-<kind>`. Started by the agents' MCP
// configurations in test/e2e/codex.test.ts and test/e2e/claude-code.test.ts.
import { createInterface } from 'node:readline';

const tools = Array.from({ length: 40 }, (_unused, kind) => ({
  name: `lookup_${kind}`,
  description: `Looks up a record of kind ${kind} in the inventory database by its id.`,
  inputSchema: {
    type: 'object',
    properties: { id: { type: 'string', description: 'The record id.' } },
    required: ['id'],
  },
}));

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  const answer = (result) => send({ jsonrpc: '2.0', id: message.id, result });
  if (message.method === 'initialize')
    answer({
      protocolVersion: message.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: 'inventory', version: '1.0.0' },
    });
  else if (message.method === 'tools/list') answer({ tools });
  else if (message.method === 'tools/call') {
    const kind = message.params.name.replace('lookup_', '');
    const id = String(message.params.arguments?.id ?? '');
    answer({ content: [{ type: 'text', text: `record ${id} of kind ${kind}: ACME-${id}-${kind}` }] });
  } else answer({});
});
