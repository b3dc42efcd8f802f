import { describe, expect, it } from 'vitest';
import { appendMessageBytes, type ArenaMessages } from '../../src/store/message-arena.js';

const none = (): ArenaMessages => ({ views: [], starts: [], ends: [] });
const texts = (messages: ArenaMessages): string[] => messages.views.map((view) => view.toString('utf8'));
const copy = (messages: ArenaMessages): ArenaMessages => ({
  views: [...messages.views],
  starts: [...messages.starts],
  ends: [...messages.ends],
});

/** Every message's view is its offsets in `memory`, and each follows the one before it after a comma. */
function expectLaidOut(memory: Buffer, messages: ArenaMessages): void {
  messages.views.forEach((view, index) => {
    expect(view.equals(memory.subarray(messages.starts[index], messages.ends[index]))).toBe(true);
    if (index > 0) {
      expect(messages.starts[index]).toBe((messages.ends[index - 1] as number) + 1);
      expect(memory[(messages.starts[index] as number) - 1]).toBe(0x2c);
    }
  });
}

describe('appendMessageBytes', () => {
  it('writes each JSON as its UTF-8 bytes, one after the other with a comma between', () => {
    const jsons = ['{"role":"user","content":"one"}', '{"content":"ü ✓ 🙂 \\"q\\""}', '{}'];
    const messages = none();
    const { arena, end } = appendMessageBytes(undefined, 0, messages, jsons);
    expect(texts(messages)).toEqual(jsons);
    expectLaidOut(arena.memory, messages);
    expect(arena.memory.subarray(0, end).toString('utf8')).toBe(jsons.join(','));
  });

  it('adds later messages right after the earlier ones in the same memory, which keep their bytes', () => {
    const messages = none();
    const first = appendMessageBytes(undefined, 0, messages, ['{"a":1}', '{"b":2}']);
    const earlier = messages.views[1];
    const second = appendMessageBytes(first.arena, first.end, messages, ['{"c":"é"}']);
    expect(second.arena).toBe(first.arena);
    expect(messages.views[1]).toBe(earlier);
    expect(texts(messages)).toEqual(['{"a":1}', '{"b":2}', '{"c":"é"}']);
    expectLaidOut(second.arena.memory, messages);
  });

  it('never writes over bytes handed out: a second load from the same earlier state gets memory of its own', () => {
    const base = none();
    const first = appendMessageBytes(undefined, 0, base, ['{"a":1}']);
    // Two loads of the session, both from what the replica held: the first writes after it...
    const one = copy(base);
    const afterOne = appendMessageBytes(first.arena, first.end, one, ['{"from":"one"}']);
    // ...and the second, which did not see that write, must not write in the same place.
    const two = copy(base);
    const afterTwo = appendMessageBytes(first.arena, first.end, two, ['{"from":"two"}']);
    expect(afterTwo.arena).not.toBe(afterOne.arena);
    expect(texts(one)).toEqual(['{"a":1}', '{"from":"one"}']);
    expect(texts(two)).toEqual(['{"a":1}', '{"from":"two"}']);
    expectLaidOut(afterOne.arena.memory, one);
    expectLaidOut(afterTwo.arena.memory, two);
  });

  it('copies everything held to new memory with room to grow when the room runs out, left-out messages dropped', () => {
    const messages = none();
    const expected = ['{"n":0}'];
    let state = appendMessageBytes(undefined, 0, messages, ['{"n":0}']);
    const memories = new Set([state.arena.memory]);
    for (let n = 1; n < 600; n++) {
      // The oldest message leaves now and then, as a session's oldest turns move to the archive.
      if (n % 7 === 0) {
        for (const list of [messages.views, messages.starts, messages.ends, expected]) list.shift();
      }
      const json = `{"n":${n},"text":"${'x'.repeat(n % 50)}"}`;
      expected.push(json);
      state = appendMessageBytes(state.arena, state.end, messages, [json]);
      memories.add(state.arena.memory);
    }
    expect(texts(messages)).toEqual(expected);
    expectLaidOut(state.arena.memory, messages);
    // Grown now and then, not once per message.
    expect(memories.size).toBeGreaterThan(1);
    expect(memories.size).toBeLessThan(40);
    // The memory holds what it was last made for and a bounded room.
    const held = messages.views.reduce((sum, view) => sum + view.length + 1, 0);
    expect(state.arena.memory.length).toBeLessThan(held * 2 + 1024);
  });
});
