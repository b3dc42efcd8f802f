// Content blocks as an Anthropic-compatible upstream takes them (block-stand-ins.ts): the blocks Claude
// Code's conversations hold that Volcano Engine's Ark refuses, each told as text where it stood.
import { describe, expect, it } from 'vitest';
import { blocksAsTaken } from '../../src/upstream/block-stand-ins.js';
import { webSearchBlocks } from '../helpers/fake-anthropic.js';

/** What Volcano Engine's Ark takes, as it lists them. */
const ark = { blocks: new Set(['text', 'thinking', 'image', 'tool_use', 'tool_result']) };

describe('blocksAsTaken', () => {
  it('is the same array when every block is taken, a tool result of text and an image included', () => {
    const blocks = [
      { type: 'text', text: 'Look.' },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_1',
        content: [
          { type: 'text', text: 'A screenshot.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } },
        ],
      },
    ];
    expect(blocksAsTaken(blocks, ark)).toBe(blocks);
  });

  it('tells a PDF Claude Code read by its title, a text document by its text, inside a tool result', () => {
    const written = blocksAsTaken(
      [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_read',
          content: [
            { type: 'text', text: 'PDF file read: report.pdf (2 pages)' },
            {
              type: 'document',
              source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' },
              title: 'report.pdf',
            },
            {
              type: 'document',
              source: { type: 'text', media_type: 'text/plain', data: 'Line one.' },
              title: 'notes.txt',
            },
          ],
        },
      ],
      ark,
    );
    expect(written).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_read',
        content: [
          { type: 'text', text: 'PDF file read: report.pdf (2 pages)' },
          { type: 'text', text: '[document report.pdf: not shown, the model takes no documents]' },
          { type: 'text', text: '[document notes.txt]\nLine one.' },
        ],
      },
    ]);
  });

  it("tells a web search Claude ran by its query and each page found, in the answer's order", () => {
    const blocks = [
      ...webSearchBlocks('srvtoolu_1', 'https://example.com/a', 'Release A'),
      { type: 'text', text: 'Found it.' },
    ];
    expect(blocksAsTaken(blocks, ark)).toEqual([
      { type: 'text', text: '[web_search: {"query":"ctxgate release"}]' },
      { type: 'text', text: 'Web search results:\n- Release A (https://example.com/a)' },
      { type: 'text', text: 'Found it.' },
    ]);
  });

  it("tells a tool search's result by the tools found, and a search result by its source and text", () => {
    expect(
      blocksAsTaken(
        [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_search',
            content: [
              { type: 'tool_reference', tool_name: 'mcp__inventory__lookup' },
              {
                type: 'search_result',
                title: 'Guide',
                source: 'https://docs/x',
                content: [{ type: 'text', text: 'Step 1.' }],
              },
            ],
          },
        ],
        ark,
      ),
    ).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_search',
        content: [
          { type: 'text', text: 'Tool found: mcp__inventory__lookup' },
          { type: 'text', text: 'Guide (https://docs/x)\nStep 1.' },
        ],
      },
    ]);
  });

  it('leaves thinking out where the upstream takes none, and names a block it has no words for', () => {
    // A proxy's list that leaves out a tool's call and result too: those are the conversation, kept.
    const taken = { blocks: new Set(['text', 'image']) };
    expect(
      blocksAsTaken(
        [
          { type: 'thinking', thinking: 'Plan.', signature: 'sig' },
          { type: 'redacted_thinking', data: 'xyz' },
          { type: 'container_upload', file_id: 'file_1' },
          { type: 'text', text: 'Done.' },
          { type: 'tool_use', id: 't1', name: 'Read', input: {} },
        ],
        taken,
      ),
    ).toEqual([
      { type: 'text', text: '[container_upload]' },
      { type: 'text', text: 'Done.' },
      { type: 'tool_use', id: 't1', name: 'Read', input: {} },
    ]);
  });

  it("tells a code execution's output by what it printed, and a failed search by its error", () => {
    expect(
      blocksAsTaken(
        [
          {
            type: 'bash_code_execution_tool_result',
            tool_use_id: 'srvtoolu_2',
            content: { type: 'bash_code_execution_result', stdout: '4\n', stderr: '', return_code: 0 },
          },
          {
            type: 'web_search_tool_result',
            tool_use_id: 'srvtoolu_3',
            content: { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' },
          },
        ],
        ark,
      ),
    ).toEqual([
      { type: 'text', text: '[bash_code_execution_tool_result]\n4\n' },
      { type: 'text', text: '[web search failed: max_uses_exceeded]' },
    ]);
  });
});

describe('blocksAsTaken, an upstream that takes fewer types in a tool result (OpenCode Zen: text and images)', () => {
  const zen = { inResults: new Set(['text', 'image']) };
  const pdfBlock = {
    type: 'document',
    source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' },
    title: 'a.pdf',
  };

  it("tells a tool result's PDF as text, and leaves the user's own PDF (a message's block) as it was", () => {
    const userPdf = {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' },
      title: 'mine.pdf',
    };
    expect(
      blocksAsTaken(
        [
          userPdf,
          { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'Read.' }, pdfBlock] },
        ],
        zen,
      ),
    ).toEqual([
      userPdf,
      {
        type: 'tool_result',
        tool_use_id: 't1',
        content: [
          { type: 'text', text: 'Read.' },
          { type: 'text', text: '[document a.pdf: not shown, the model takes no documents]' },
        ],
      },
    ]);
  });

  it("tells a mid-conversation tool change by the tool it names (a local server's pydantic union has none)", () => {
    expect(
      blocksAsTaken(
        [
          { type: 'tool_addition', tool: { type: 'tool_reference', name: 'mcp__db__query' } },
          { type: 'tool_removal', tool: { type: 'tool_definition', definition: { name: 'old_tool' } } },
        ],
        { blocks: new Set(['text']) },
      ),
    ).toEqual([
      { type: 'text', text: 'Tool added: mcp__db__query' },
      { type: 'text', text: 'Tool removed: old_tool' },
    ]);
  });
});
