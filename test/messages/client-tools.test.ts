// Anthropic's client tools, told by their versioned type: which become functions, and with which commands.
import { describe, expect, it } from 'vitest';
import { clientToolOf } from '../../src/messages/client-tools.js';

const commandsOf = (type: string) =>
  (clientToolOf(type)?.parameters.properties as { command?: { enum?: string[] } } | undefined)?.command?.enum;

describe('clientToolOf', () => {
  it.each([
    ['bash_20250124', undefined],
    ['bash_20241022', undefined],
    ['text_editor_20250728', ['view', 'create', 'str_replace', 'insert']],
    ['text_editor_20250429', ['view', 'create', 'str_replace', 'insert']],
    ['text_editor_20250124', ['view', 'create', 'str_replace', 'insert', 'undo_edit']],
    ['text_editor_20241022', ['view', 'create', 'str_replace', 'insert', 'undo_edit']],
    ['memory_20250818', ['view', 'create', 'str_replace', 'insert', 'delete', 'rename']],
  ])('%s is a function (commands: %j)', (type, commands) => {
    expect(clientToolOf(type)).toBeDefined();
    expect(commandsOf(type)).toEqual(commands);
  });

  it.each([
    'web_search_20250305',
    'code_execution_20250825',
    'computer_20250124',
    'bash',
    'bash_2025',
    'custom',
  ])('%s is not', (type) => {
    expect(clientToolOf(type)).toBeUndefined();
  });
});
