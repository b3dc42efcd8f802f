// The Responses API's client-run tools (shell, apply_patch) as a chat model is given them, and the
// model's calls of them as the items the client runs: what a model writes that is not quite the schema
// is read as it meant, and the client's outputs are told as the model can read them.
import { describe, expect, it } from 'vitest';
import {
  localCallArguments,
  localCallItem,
  localOutputContent,
  localToolOf,
} from '../../src/responses/local-tools.js';

describe('localToolOf', () => {
  it.each([
    ['a shell of no environment (a direct ShellTool literal: local)', { type: 'shell' }, 'shell'],
    ['a local shell', { type: 'shell', environment: { type: 'local' } }, 'shell'],
    ["a shell in OpenAI's container", { type: 'shell', environment: { type: 'container_auto' } }, undefined],
    [
      'a shell in a container referenced by id',
      { type: 'shell', environment: { type: 'container_reference' } },
      undefined,
    ],
    ['apply_patch', { type: 'apply_patch' }, 'apply_patch'],
    ['a function tool', { type: 'function', name: 'shell' }, undefined],
    ['local_shell (run by Codex, with another call shape)', { type: 'local_shell' }, undefined],
  ])('%s', (_name, tool, kind) => {
    expect(localToolOf(tool)?.kind).toBe(kind);
  });

  it("names a local environment's skills in the shell's description, each with its folder", () => {
    const tool = localToolOf({
      type: 'shell',
      environment: {
        type: 'local',
        skills: [{ name: 'pdf', description: 'Reads PDFs.', path: '/skills/pdf' }, { name: 'broken' }],
      },
    });
    expect(tool?.chat.function.description).toMatch(/\n- pdf \(\/skills\/pdf\): Reads PDFs\.$/);
    expect(tool?.chat.function.description).not.toContain('broken');
  });
});

describe('localCallArguments', () => {
  it.each([
    [
      'a shell call, its limits of null left out',
      { type: 'shell_call', action: { commands: ['ls'], timeout_ms: null, max_output_length: 200 } },
      { commands: ['ls'], max_output_length: 200 },
    ],
    ['a shell call of no action', { type: 'shell_call' }, { commands: [] }],
    [
      'a move',
      { type: 'apply_patch_call', operation: { type: 'update_file', path: 'a', diff: '@@', move_to: 'b' } },
      { type: 'update_file', path: 'a', diff: '@@', move_to: 'b' },
    ],
    [
      'a deletion',
      { type: 'apply_patch_call', operation: { type: 'delete_file', path: 'a' } },
      { type: 'delete_file', path: 'a' },
    ],
  ])('%s', (_name, item, expected) => {
    expect(JSON.parse(localCallArguments(item))).toEqual(expected);
  });
});

describe('localOutputContent', () => {
  it.each([
    [
      'a command that timed out',
      {
        type: 'shell_call_output',
        output: [{ stdout: 'partial', stderr: '', outcome: { type: 'timeout' } }],
      },
      'partial\n[timed out]',
    ],
    [
      'an outcome of no exit code',
      { type: 'shell_call_output', output: [{ stdout: 'x', outcome: { type: 'exit' } }] },
      'x\n[exit code unknown]',
    ],
    ['no output at all', { type: 'shell_call_output', output: [] }, '(no output)'],
    ['a patch applied, the editor silent', { type: 'apply_patch_call_output', status: 'completed' }, 'Done'],
    [
      'a patch that failed',
      { type: 'apply_patch_call_output', status: 'failed', output: 'Context not found' },
      'Failed: Context not found',
    ],
  ])('%s', (_name, item, expected) => {
    expect(localOutputContent(item)).toBe(expected);
  });
});

describe('localCallItem', () => {
  const commandsOf = (args: string) =>
    (localCallItem('shell', 'sh_1', 'call_1', args, 'completed').action as { commands: unknown }).commands;
  const operationOf = (args: string, status = 'completed') =>
    localCallItem('apply_patch', 'apc_1', 'call_1', args, status).operation;

  it.each([
    ['a list of commands', '{"commands":["ls","pwd"]}', ['ls', 'pwd']],
    ['one command as a string', '{"commands":"ls -la"}', ['ls -la']],
    ['one command under the singular name', '{"command":"git status"}', ['git status']],
    ['entries not strings left out', '{"commands":["ls",3,null]}', ['ls']],
    ['arguments that are not JSON', 'ls', []],
  ])('shell: %s', (_name, args, commands) => {
    expect(commandsOf(args)).toEqual(commands);
  });

  it.each([
    [
      'an operation as given',
      '{"type":"create_file","path":"a","diff":"+x"}',
      { type: 'create_file', path: 'a', diff: '+x' },
    ],
    [
      'no type, a diff: an update',
      '{"path":"a","diff":"@@\\n-x\\n+y"}',
      { type: 'update_file', path: 'a', diff: '@@\n-x\n+y' },
    ],
    ['no type, no diff: a deletion', '{"path":"a"}', { type: 'delete_file', path: 'a' }],
    [
      'a type it does not know, a diff: an update',
      '{"type":"patch","path":"a","diff":"@@"}',
      { type: 'update_file', path: 'a', diff: '@@' },
    ],
    [
      'a creation of no diff: an empty file',
      '{"type":"create_file","path":"a"}',
      { type: 'create_file', path: 'a', diff: '' },
    ],
    [
      'a move outside an update left out',
      '{"type":"delete_file","path":"a","move_to":"b"}',
      { type: 'delete_file', path: 'a' },
    ],
  ])('apply_patch: %s', (_name, args, operation) => {
    expect(operationOf(args)).toEqual(operation);
  });

  it('in progress, before its arguments are whole: no commands, an update of no path', () => {
    expect(commandsOf('')).toEqual([]);
    expect(operationOf('{"type":"delete_f', 'in_progress')).toEqual({
      type: 'update_file',
      path: '',
      diff: '',
    });
  });
});
