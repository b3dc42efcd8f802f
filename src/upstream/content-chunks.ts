// An answer's content as some providers give it: not a string but a list of chunks — Mistral's reasoning
// models (Magistral) answer `[{type: "thinking", thinking: [{type: "text", text}]}, {type: "text", text}]`
// and stream the same chunks as each delta's `content`, as some gateways do with text parts. Read as the
// answer's text and its thinking; a string is the text. Pure.

/** The text and the thinking of an answer's (or a delta's) content; '' for what it does not hold. */
export function chunkTexts(content: unknown): { text: string; thinking: string } {
  if (typeof content === 'string') return { text: content, thinking: '' };
  if (!Array.isArray(content)) return { text: '', thinking: '' };
  let text = '';
  let thinking = '';
  for (const chunk of content as unknown[]) {
    if (typeof chunk !== 'object' || chunk === null) continue;
    const { type, text: own, thinking: thought } = chunk as Record<string, unknown>;
    if ((type === 'text' || type === 'output_text') && typeof own === 'string') text += own;
    else if (type === 'thinking')
      thinking += typeof thought === 'string' ? thought : chunkTexts(thought).text;
  }
  return { text, thinking };
}

/** Mistral's form of an answer that thought: its thinking as a chunk, then its text (if any) as one. */
export function thinkingChunks(thinking: string, text: string): Array<Record<string, unknown>> {
  const chunks: Array<Record<string, unknown>> = [
    { type: 'thinking', thinking: [{ type: 'text', text: thinking }] },
  ];
  if (text !== '') chunks.push({ type: 'text', text });
  return chunks;
}
