// Anthropic's client tools: tools whose schema Anthropic builds into Claude and which the client runs —
// bash (`bash_20250124`), the text editor (`text_editor_20250728`, and the versions before it) and
// memory (`memory_20250818`, the Anthropic SDK's `betaMemoryTool`). A request names them by a versioned
// type and a name, with no schema; a Chat Completions model is given each as a function of that name
// with the schema Claude knows (Anthropic's tool docs), so its calls come back as the `tool_use` blocks
// the client runs, and their results go as any tool's. Computer use is left out: its actions answer
// with screenshots a model that was not trained on them cannot act on. docs/anthropic.md tells it.

/** The chat function a client tool is given as: its description and parameters. */
interface ClientTool {
  description: string;
  parameters: Record<string, unknown>;
}

const path = (what: string) => ({ type: 'string', description: what });

const bash: ClientTool = {
  description:
    'Runs a command in a persistent bash session (its working directory and environment kept between ' +
    'calls) and returns what it printed. `restart: true` starts a new session.',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The command to run.' },
      restart: { type: 'boolean', description: 'Restart the session instead of running a command.' },
    },
    additionalProperties: false,
  },
};

/** The text editor; `undo_edit` in the versions before Claude 4 (text_editor_20250124 and older). */
const textEditor = (undo: boolean): ClientTool => ({
  description: [
    'Views, creates and edits text files.',
    "- view: a file with its lines numbered (`view_range`: [first, last], -1 for the end), or a directory's entries.",
    '- create: writes `file_text` to a new file at `path`.',
    '- str_replace: replaces `old_str`, which must occur exactly once in the file (whitespace included), with `new_str`.',
    '- insert: inserts `new_str` after line `insert_line` (0: at the start).',
    ...(undo ? ['- undo_edit: reverts the last edit of the file.'] : []),
  ].join('\n'),
  parameters: {
    type: 'object',
    properties: {
      command: {
        type: 'string',
        enum: ['view', 'create', 'str_replace', 'insert', ...(undo ? ['undo_edit'] : [])],
      },
      path: path('The file or directory.'),
      file_text: { type: 'string' },
      old_str: { type: 'string' },
      new_str: { type: 'string' },
      insert_line: { type: 'integer' },
      view_range: { type: 'array', items: { type: 'integer' } },
    },
    required: ['command', 'path'],
    additionalProperties: false,
  },
});

const memory: ClientTool = {
  description: [
    'Your memory: a directory of files, /memories, kept across conversations. View it before a task, and',
    'record in it what you learn as you go, as your context may be cleared at any time.',
    "- view: a file with its lines numbered (`view_range`), or a directory's entries.",
    '- create: writes `file_text` to the file at `path`.',
    '- str_replace: replaces `old_str` (exactly once in the file) with `new_str`.',
    '- insert: inserts `insert_text` after line `insert_line`.',
    '- delete: deletes the file or directory at `path`.',
    '- rename: moves `old_path` to `new_path`.',
  ].join('\n'),
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', enum: ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'] },
      path: path('The file or directory, under /memories.'),
      file_text: { type: 'string' },
      old_str: { type: 'string' },
      new_str: { type: 'string' },
      insert_line: { type: 'integer' },
      insert_text: { type: 'string' },
      view_range: { type: 'array', items: { type: 'integer' } },
      old_path: { type: 'string' },
      new_path: { type: 'string' },
    },
    required: ['command'],
    additionalProperties: false,
  },
};

/**
 * The chat function a client tool of this versioned type is given as, or undefined for any other type
 * (a server tool, computer use). Versions are told by their date: bash_ and memory_ of any date, the
 * text editor with `undo_edit` up to text_editor_20250124.
 */
export function clientToolOf(type: string): ClientTool | undefined {
  const match = /^(bash|text_editor|memory)_(\d{8})$/.exec(type);
  if (match === null) return undefined;
  if (match[1] === 'bash') return bash;
  if (match[1] === 'memory') return memory;
  return textEditor(Number(match[2]) <= 20250124);
}
