// Tool calls written as text, as the tests of text-call-forms.ts and text-tool-calls.ts share them: tools
// offered, and the blocks and answers models write.
import { offeredTools, type OfferedTools } from '../../src/upstream/text-tool-calls.js';

export const tools = offeredTools({
  tools: [
    {
      type: 'function',
      function: {
        name: 'edit',
        parameters: {
          type: 'object',
          properties: { path: { type: 'string' }, line: { type: 'integer' }, flags: { type: 'array' } },
        },
      },
    },
    { type: 'function', function: { name: 'list' } },
  ],
}) as OfferedTools;

/** DeepSeek V3.2's and V4's markup (DSML), its markers joined to `｜DSML｜`. */
export const dsml = (text: string) => text.replaceAll('<D|', '<｜DSML｜').replaceAll('</D|', '</｜DSML｜');
export const hermes = '<tool_call>\n{"name": "edit", "arguments": {"path": "a.ts", "line": 3}}\n</tool_call>';
export const qwenCoder =
  '<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a b.ts\n</parameter>\n<parameter=line>\n3\n</parameter>\n<parameter=flags>\n["x"]\n</parameter>\n</function>\n</tool_call>';

/**
 * Answers whose reasoning drafts a call before the answer makes it (PrimeIntellect-ai/renderers#78,
 * verl-project/verl#4757): the reasoning opened by the model, or by its template (the text begins inside
 * it), then the call once — and what the client is given as text.
 */
export const drafted: Array<[string, string, string]> = [
  [
    'the model opened its reasoning',
    `<think>\nThe user wants a.ts at line 3.\n${hermes}\nThat is the call.\n</think>\n\n${hermes}`,
    `<think>\nThe user wants a.ts at line 3.\n${hermes}\nThat is the call.\n</think>`,
  ],
  [
    'its template opened its reasoning',
    `Line 3 of a.ts.\n${qwenCoder}\nGood.\n</think>\n\nEditing.\n${hermes}`,
    `Line 3 of a.ts.\n${qwenCoder}\nGood.\n</think>\n\nEditing.`,
  ],
];
