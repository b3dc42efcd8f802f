// The Responses API's tools that the client runs on its own machine: `shell` in a local environment
// (the Agents SDK's `shellTool({ shell })`) and `apply_patch` (its `applyPatchTool({ editor })`). OpenAI
// gives the model their definitions itself; a Chat Completions model is given each as a function tool
// of that name, its call goes back to the client as the item the client runs (`shell_call`,
// `apply_patch_call`), and the client's results (`shell_call_output`, `apply_patch_call_output`) go to
// the model as the tool messages of those calls. A shell in one of OpenAI's containers runs there, not
// at the client: it stays a built-in tool the gateway drops. docs/responses.md tells the mapping.
import { isRecord } from '../upstream/tool-call-shape.js';
/** A client-run tool of the Responses API, by its chat function's name (which is its type). */
export type LocalToolKind = 'shell' | 'apply_patch';

interface ChatFunctionTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

const shellDescription =
  "Runs shell commands on the user's machine, one after the other, and returns what each printed " +
  '(stdout, stderr) and its exit code. Use it to inspect files, run programs and tests, and search the ' +
  'workspace.';

const applyPatchDescription = [
  'Creates, updates or deletes one file in the workspace.',
  '- create_file: `diff` is the new file, every line starting with "+".',
  '- update_file: `diff` is a V4A diff without a file header: one or more sections, each starting with',
  '  "@@" (optionally followed by a line of the file that locates it, such as a function\'s signature),',
  '  then the lines of the change: " " a line kept as it is (give about three before and after each change),',
  '  "-" a line removed, "+" a line added. `move_to` renames the file.',
  '- delete_file: no `diff`.',
].join('\n');

/** The skills a local shell environment offers (the Agents SDK's `skills`), one line each. */
function skillLines(environment: Record<string, unknown> | undefined): string {
  const skills = Array.isArray(environment?.skills) ? environment.skills : [];
  const lines = skills.flatMap((skill: unknown) =>
    isRecord(skill) && typeof skill.name === 'string' && typeof skill.path === 'string'
      ? [
          `- ${skill.name} (${skill.path})${typeof skill.description === 'string' ? `: ${skill.description}` : ''}`,
        ]
      : [],
  );
  return lines.length === 0
    ? ''
    : `\nSkills, each described in the SKILL.md of its folder:\n${lines.join('\n')}`;
}

/**
 * The chat function a client-run tool becomes, or undefined for any other tool (a shell in one of
 * OpenAI's containers among them).
 */
export function localToolOf(
  tool: Record<string, unknown>,
): { kind: LocalToolKind; chat: ChatFunctionTool } | undefined {
  if (tool.type === 'apply_patch')
    return {
      kind: 'apply_patch',
      chat: {
        type: 'function',
        function: {
          name: 'apply_patch',
          description: applyPatchDescription,
          parameters: {
            type: 'object',
            properties: {
              type: { type: 'string', enum: ['create_file', 'update_file', 'delete_file'] },
              path: { type: 'string', description: 'The file, relative to the workspace.' },
              diff: { type: 'string' },
              move_to: { type: 'string', description: 'update_file only: the path to move the file to.' },
            },
            required: ['type', 'path'],
            additionalProperties: false,
          },
        },
      },
    };
  if (tool.type !== 'shell') return undefined;
  const environment = isRecord(tool.environment) ? tool.environment : undefined;
  if (environment !== undefined && environment.type !== 'local') return undefined;
  return {
    kind: 'shell',
    chat: {
      type: 'function',
      function: {
        name: 'shell',
        description: shellDescription + skillLines(environment),
        parameters: {
          type: 'object',
          properties: {
            commands: {
              type: 'array',
              items: { type: 'string' },
              description: 'The commands to run, in order.',
            },
            timeout_ms: { type: 'integer', description: 'How long the commands may run, in milliseconds.' },
            max_output_length: {
              type: 'integer',
              description: 'The most characters of output to return per command.',
            },
          },
          required: ['commands'],
          additionalProperties: false,
        },
      },
    },
  };
}

/** The arguments of a client-run tool's call item, as the chat function's (localToolOf) JSON. */
export function localCallArguments(item: Record<string, unknown>): string {
  if (item.type === 'shell_call') {
    const action = isRecord(item.action) ? item.action : {};
    return JSON.stringify({
      commands: Array.isArray(action.commands) ? action.commands : [],
      ...(typeof action.timeout_ms === 'number' ? { timeout_ms: action.timeout_ms } : {}),
      ...(typeof action.max_output_length === 'number'
        ? { max_output_length: action.max_output_length }
        : {}),
    });
  }
  const operation = isRecord(item.operation) ? item.operation : {};
  return JSON.stringify({
    type: operation.type,
    path: operation.path,
    ...(typeof operation.diff === 'string' ? { diff: operation.diff } : {}),
    ...(typeof operation.move_to === 'string' ? { move_to: operation.move_to } : {}),
  });
}

/**
 * What a client-run tool's output item tells the model: each command's stdout, its stderr and how it
 * ended (a shell's), or whether the patch applied and what the editor said (apply_patch's).
 */
export function localOutputContent(item: Record<string, unknown>): string {
  if (item.type === 'apply_patch_call_output') {
    const said = typeof item.output === 'string' && item.output !== '' ? `: ${item.output}` : '';
    return `${item.status === 'failed' ? 'Failed' : 'Done'}${said}`;
  }
  const outputs = Array.isArray(item.output) ? item.output : [];
  if (outputs.length === 0) return '(no output)';
  return outputs
    .map((entry: unknown) => {
      const each = isRecord(entry) ? entry : {};
      const outcome = isRecord(each.outcome) ? each.outcome : {};
      const ended =
        outcome.type === 'timeout'
          ? 'timed out'
          : `exit code ${typeof outcome.exit_code === 'number' ? outcome.exit_code : 'unknown'}`;
      const stdout = typeof each.stdout === 'string' ? each.stdout : '';
      const stderr =
        typeof each.stderr === 'string' && each.stderr !== '' ? `\n[stderr]\n${each.stderr}` : '';
      return `${stdout}${stderr}\n[${ended}]`;
    })
    .join('\n\n');
}

/** The JSON object the model wrote as a call's arguments; undefined when it wrote no JSON object. */
export function argumentsObject(args: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(args);
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

const operations = new Set(['create_file', 'update_file', 'delete_file']);

/**
 * A call of a client-run tool as the Response output item the client runs: a `shell_call` of the
 * commands the model gave (one command given as a string is a list of it), an `apply_patch_call` of
 * its operation (of no type named: an update when it has a diff, else a deletion). In progress, its
 * arguments are not whole: no commands, an update of no path.
 */
export function localCallItem(
  kind: LocalToolKind,
  id: string,
  callId: unknown,
  args: string,
  status: string,
): Record<string, unknown> {
  const given = (status === 'completed' ? argumentsObject(args) : undefined) ?? {};
  const common = { id, status, call_id: callId };
  if (kind === 'shell') {
    const commands = Array.isArray(given.commands)
      ? given.commands.filter((command): command is string => typeof command === 'string')
      : typeof given.commands === 'string'
        ? [given.commands]
        : typeof given.command === 'string'
          ? [given.command]
          : [];
    return Object.assign({ type: 'shell_call' }, common, {
      action: {
        commands,
        timeout_ms: typeof given.timeout_ms === 'number' ? given.timeout_ms : null,
        max_output_length: typeof given.max_output_length === 'number' ? given.max_output_length : null,
      },
      environment: { type: 'local' },
    });
  }
  const diff = typeof given.diff === 'string' ? given.diff : undefined;
  const type =
    typeof given.type === 'string' && operations.has(given.type)
      ? given.type
      : diff === undefined && status === 'completed'
        ? 'delete_file'
        : 'update_file';
  const operation: Record<string, unknown> = { type, path: typeof given.path === 'string' ? given.path : '' };
  if (type !== 'delete_file') operation.diff = diff ?? '';
  if (type === 'update_file' && typeof given.move_to === 'string') operation.move_to = given.move_to;
  return Object.assign({ type: 'apply_patch_call' }, common, { operation });
}
