// Incremental decoder for text/event-stream: feed it text as it arrives, get whole events back.
// Pure: the caller turns bytes into text (a streaming TextDecoder keeps multi-byte characters whole).

export interface ServerSentEvent {
  event: string | undefined;
  data: string;
}

export class SseDecoder {
  private buffer = '';
  private dataLines: string[] = [];
  private eventName: string | undefined = undefined;

  /** Returns the events completed by this piece of text. */
  push(text: string): ServerSentEvent[] {
    this.buffer += text;
    const events: ServerSentEvent[] = [];
    let start = 0;
    for (;;) {
      const newline = this.findLineEnd(start);
      if (newline === -1) break;
      const line = this.buffer.slice(start, newline);
      start = newline + (this.buffer[newline] === '\r' && this.buffer[newline + 1] === '\n' ? 2 : 1);
      this.takeLine(line, events);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** Flushes an event the stream ended without a blank line after. */
  end(): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    if (this.buffer !== '') this.takeLine(this.buffer, events);
    this.buffer = '';
    this.takeLine('', events);
    return events;
  }

  private findLineEnd(from: number): number {
    for (let index = from; index < this.buffer.length; index++) {
      const code = this.buffer.charCodeAt(index);
      if (code === 10) return index;
      if (code === 13) {
        // A lone CR at the very end may be the first half of CRLF: wait for more text.
        if (index === this.buffer.length - 1) return -1;
        return index;
      }
    }
    return -1;
  }

  private takeLine(line: string, events: ServerSentEvent[]): void {
    if (line === '') {
      if (this.dataLines.length > 0) events.push({ event: this.eventName, data: this.dataLines.join('\n') });
      this.dataLines = [];
      this.eventName = undefined;
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' starts a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventName = value;
  }
}
