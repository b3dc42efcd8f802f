// The rounds of the recall tool (docs/budgeting.md#recall) between the gateway and the upstream, before
// the client gets its answer: while the model's answer is a call to the tool alone, the gateway answers
// it from the messages the model was not shown whole and asks again; an answer for the client goes on
// with any recall call taken out of it. A stream is looked at until it shows which it is (a recall call
// first, or content, a refusal or a call of the client's tools first); nothing reaches the client
// before that. The rounds are bounded: after `maxCalls` answered rounds the tool answers that the
// search is over, and an answer that still calls it is given to the client without the call.
import { isRecallCall, recallLimitReached, recallNoRoom, recallQuery } from '../context/recall.js';
import type { ContextMessage } from '../context/types.js';
import { completionWithoutRecallCalls, RecallDeltaFilter, StreamLead } from '../upstream/recall-stream.js';
import { reasoningOf } from '../upstream/reasoning-field.js';
import { StreamReplyAssembler } from '../upstream/reply-assembler.js';
import { readWholeAnswer } from '../upstream/relay.js';
import { replaying } from '../upstream/inspect-answer.js';
import { completionTokensKey, promptTokensIn, usageNumberIn } from '../upstream/sse.js';
import type { UpstreamResponse } from '../upstream/upstream.js';

/** How far a stream is read, undecided, before it is taken as the client's (reasoning can be long). */
const maxUndecidedBytes = 256 * 1024;

export interface RecallRoundsInput {
  /** The upstream's answer (a success) to `request`. */
  response: UpstreamResponse;
  /** The chat request it answers: a round's is this with the calls and their results appended. */
  request: Readonly<Record<string, unknown>>;
  streaming: boolean;
  /** Rounds answered with a search; past them the tool answers that the search is over. */
  maxCalls: number;
  /** Most tokens one search's result may take. */
  resultTokens: number;
  /** Tokens left in the window for the calls and their results (the gateway's count). */
  room: number;
  /** The gateway's count of a message. */
  count: (message: ContextMessage) => number;
  /** The prompt of `request` in the provider's units: the estimate of a round whose usage is not told. */
  promptTokens: number;
  /** The result of one call: the passages that match `query`, within `maxTokens`. */
  search: (query: string, maxTokens: number) => Promise<string>;
  /** Sends a round's chat body to the same upstream, model and stream mode. */
  send: (body: Buffer) => Promise<UpstreamResponse>;
}

export interface RecallRoundsOutcome {
  /** What the client gets: the last answer, recall calls taken out. */
  response: UpstreamResponse;
  /** Recall calls the gateway answered. */
  calls: number;
  /** What the rounds the client never saw cost (the upstream's usage, else the gateway's estimate). */
  usage: { promptTokens: number; completionTokens: number; estimated: boolean };
}

/** A stream relayed through the filter that takes recall calls out of it. */
function filteredStream(response: UpstreamResponse): UpstreamResponse {
  const filter = new RecallDeltaFilter();
  const forEachChunk: UpstreamResponse['forEachChunk'] = async (onChunk) => {
    await response.forEachChunk((chunk) => {
      const out = filter.push(chunk);
      return out === undefined ? undefined : onChunk(out);
    });
    const rest = filter.end();
    if (rest !== undefined) await onChunk(rest);
  };
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    forEachChunk,
    async readAll() {
      const chunks: Buffer[] = [];
      await forEachChunk((chunk) => void chunks.push(chunk));
      return Buffer.concat(chunks);
    },
    discard: () => response.discard(),
    peek: (enough, wait) => response.peek(enough, wait),
  };
}

interface Round {
  /** The assistant's message, as far as it is the model's answer. */
  reply: Record<string, unknown> | undefined;
  /** The answer as the client would get it (a whole body, or the stream to relay). */
  forClient: UpstreamResponse;
  usage: { promptTokens: number | undefined; completionTokens: number | undefined };
}

/** Reads an answer as far as needed: whole when it leads with a recall call, else not at all. */
async function readRound(response: UpstreamResponse, streaming: boolean): Promise<Round | undefined> {
  if (!streaming) {
    // Read as the turn reads a whole answer (a 2xx that is not a completion is refused there, as there).
    const answer = await readWholeAnswer(response, { expectCompletion: true });
    const completion = answer.completion as Record<string, unknown>;
    const calls = (answer.reply?.tool_calls as Array<{ function?: { name?: string } }> | undefined) ?? [];
    return {
      reply: answer.reply,
      forClient: replaying(
        response,
        calls.some(isRecallCall)
          ? Buffer.from(JSON.stringify(completionWithoutRecallCalls(completion)))
          : answer.body,
      ),
      usage: answer.usage,
    };
  }
  const seen = new StreamLead();
  let read = 0;
  const head = await response.peek((received) => {
    seen.push(received.subarray(read));
    read = received.length;
    return seen.lead !== 'undecided' || received.length > maxUndecidedBytes;
  });
  // What an earlier look (the check for an error event first) already read, or a stream that had ended
  // by then, comes back without `enough` being asked about it.
  if (head.length > read) seen.push(head.subarray(read));
  // Content (or a call of the client's) first: relayed as it comes; nothing more is asked.
  if (seen.lead !== 'recall') return undefined;
  const bytes = await response.readAll();
  const assembler = new StreamReplyAssembler();
  assembler.push(bytes);
  return {
    reply: assembler.end().message,
    forClient: filteredStream(replaying(response, bytes)),
    usage: {
      promptTokens: promptTokensIn(bytes),
      completionTokens: usageNumberIn(bytes, completionTokensKey),
    },
  };
}

interface ToolCall {
  id: string;
  type?: string;
  function?: { name?: string; arguments?: string };
  extra_content?: unknown;
}

export async function answerRecallCalls(input: RecallRoundsInput): Promise<RecallRoundsOutcome> {
  let { response } = input;
  const messages = [...((input.request.messages as unknown[] | undefined) ?? [])];
  let calls = 0;
  let used = 0;
  const usage = { promptTokens: 0, completionTokens: 0, estimated: false };
  for (let round = 1; ; round++) {
    if (response.statusCode >= 300) return { response, calls, usage };
    const read = await readRound(response, input.streaming);
    if (read === undefined) return { response: filteredStream(response), calls, usage };
    const toolCalls = (read.reply?.tool_calls as ToolCall[] | undefined) ?? [];
    const recallCalls = toolCalls.filter(isRecallCall);
    // An answer for the client (its own calls, or no calls), or one past the last round: it goes on.
    if (recallCalls.length === 0 || recallCalls.length < toolCalls.length || round > input.maxCalls + 1)
      return { response: read.forClient, calls, usage };
    // The model's call, answered: what it cost is the gateway's to count (the client never sees it).
    const reasoning = reasoningOf(read.reply);
    const assistant: ContextMessage = {
      role: 'assistant',
      // A string, or chunks as the provider gave them (Mistral's reasoning models' thinking).
      content:
        typeof read.reply?.content === 'string' || Array.isArray(read.reply?.content)
          ? read.reply.content
          : null,
      tool_calls: recallCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' },
        // What the provider attached to the call: Gemini 3 refuses it back without its thought signature.
        ...(call.extra_content === undefined ? {} : { extra_content: call.extra_content }),
      })),
      // A thinking model's reasoning goes back with its call, under its own name: DeepSeek and Kimi
      // refuse the call without it.
      ...(reasoning === undefined ? {} : { [reasoning.field]: reasoning.text }),
    };
    const assistantTokens = input.count(assistant);
    usage.promptTokens += read.usage.promptTokens ?? input.promptTokens + used;
    usage.completionTokens += read.usage.completionTokens ?? assistantTokens;
    if (read.usage.promptTokens === undefined || read.usage.completionTokens === undefined)
      usage.estimated = true;
    used += assistantTokens;
    const results: ContextMessage[] = [];
    for (const call of recallCalls) {
      // Each call's share of the room left, a little kept for the messages' framing.
      const share = Math.floor((input.room - used) / (recallCalls.length - results.length)) - 24;
      const maxTokens = Math.min(input.resultTokens, share);
      const text =
        round > input.maxCalls
          ? recallLimitReached
          : maxTokens < 48
            ? recallNoRoom
            : await input.search(recallQuery(call.function?.arguments), maxTokens);
      const result: ContextMessage = { role: 'tool', tool_call_id: call.id, content: text };
      results.push(result);
      used += input.count(result);
    }
    calls += recallCalls.length;
    messages.push(assistant, ...results);
    response = await input.send(Buffer.from(JSON.stringify(Object.assign({}, input.request, { messages }))));
  }
}
