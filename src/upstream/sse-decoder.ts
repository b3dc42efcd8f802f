// Incremental decoder for text/event-stream: feed it text as it arrives, get whole events back.
// Pure: the caller turns bytes into text (a streaming TextDecoder keeps multi-byte characters whole).
// Linear in what it is fed: each piece of text is scanned once, and a line that spans many pieces is
// collected as its pieces and joined once when it ends (a 16 MB event costs one pass, not one pass per
// chunk).

export interface ServerSentEvent {
  event: string | undefined;
  data: string;
}

export class SseDecoder {
  /** The pieces of the line not yet ended. */
  private partial: string[] = [];
  /** The previous piece ended with CR: an LF at the start of the next one belongs to it. */
  private skipLeadingLineFeed = false;
  private dataLines: string[] = [];
  private eventName: string | undefined = undefined;

  /** Returns the events completed by this piece of text. */
  push(text: string): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    let start = 0;
    if (this.skipLeadingLineFeed && text.length > 0) {
      this.skipLeadingLineFeed = false;
      if (text.charCodeAt(0) === 10) start = 1;
    }
    for (let index = start; index < text.length; index++) {
      const code = text.charCodeAt(index);
      if (code !== 10 && code !== 13) continue;
      this.takeLine(this.lineEndingAt(text, start, index), events);
      if (code === 13) {
        if (index + 1 === text.length) this.skipLeadingLineFeed = true;
        else if (text.charCodeAt(index + 1) === 10) index++;
      }
      start = index + 1;
    }
    if (start < text.length) this.partial.push(start === 0 ? text : text.slice(start));
    return events;
  }

  /** Flushes an event the stream ended without a blank line after. */
  end(): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    if (this.partial.length > 0) this.takeLine(this.lineEndingAt('', 0, 0), events);
    this.skipLeadingLineFeed = false;
    this.takeLine('', events);
    return events;
  }

  private lineEndingAt(text: string, start: number, end: number): string {
    const tail = text.slice(start, end);
    if (this.partial.length === 0) return tail;
    this.partial.push(tail);
    const line = this.partial.join('');
    this.partial = [];
    return line;
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
