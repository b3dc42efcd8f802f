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
