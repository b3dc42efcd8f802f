import { StreamReplyAssembler } from '../../src/upstream/reply-assembler.js';

// The events of an SSE text as the gateway's translators write them: each event's name and its data.
export function sseEvents(text: string): Array<{ event: string; data: Record<string, unknown> }> {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => ({
      event: /^event: (.*)$/m.exec(block)?.[1] ?? '',
      data: JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown>,
    }));
}

/** The data of each event, in order. */
export function sseEventData(text: string): Array<Record<string, unknown>> {
  return sseEvents(text).map((event) => event.data);
}

/**
 * The events of a translator's text, each checked to be written as `JSON.stringify` writes its object
 * (compact, members in their order) under an `event:` line naming its type. Split on LF only: U+2028
 * in a text is not a line end of an event stream.
 */
export function eventsWrittenAsJson(text: string): Array<Record<string, unknown>> {
  const events: Array<Record<string, unknown>> = [];
  for (const block of text.split('\n\n').filter((entry) => entry !== '')) {
    const [eventLine, dataLine = ''] = block.split('\n');
    const data = dataLine.slice('data: '.length);
    const event = JSON.parse(data) as Record<string, unknown>;
    if (JSON.stringify(event) !== data) throw new Error(`not written as JSON.stringify writes it: ${data}`);
    if (eventLine !== `event: ${String(event.type)}`) throw new Error(`event line ${eventLine} for ${data}`);
    events.push(event);
  }
  return events;
}

/**
 * A chat stream of two parallel calls the provider gave no id (the first's empty, the second's not
 * said), ending in tool_calls, and the ids a session stores of it (reply-assembler.ts).
 */
export function idlessCallsStream(): { events: string; stored: string[] } {
  const delta = (call: Record<string, unknown>) => ({
    id: 'chatcmpl-9',
    choices: [{ index: 0, delta: { tool_calls: [call] } }],
  });
  const events = [
    delta({ index: 0, id: '', function: { name: 'w', arguments: '{}' } }),
    delta({ index: 1, function: { name: 'w', arguments: '{}' } }),
    { id: 'chatcmpl-9', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  ]
    .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
    .join('');
  const assembler = new StreamReplyAssembler();
  assembler.push(Buffer.from(events));
  const stored = (assembler.end().message.tool_calls as Array<{ id: string }>).map((call) => call.id);
  return { events, stored };
}
