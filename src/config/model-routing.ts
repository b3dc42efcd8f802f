// Which upstream and which model entry a model name gets (docs/configuration.md): the first configured
// upstream whose globs match (the default upstream matches everything and stands last), and the first
// model entry — the config file's, then the built-in table's, for the whole name and then, for a
// router's `provider/model`, for its last segment — else the fallback entry. The globs are compiled once
// per configuration; the answers for names seen lately are kept (bounded: a client cycling through
// model names cannot grow them), so no glob is tested twice for a name.
import type { ModelEntryConfig } from './config-schema.js';
import type { UpstreamConfig } from './gateway-config.js';
import { globToRegExp } from './glob.js';
import { builtInModelTable, fallbackModelEntry, type ModelEntry } from './model-table.js';

export interface ModelRouting {
  upstreamFor(model: string): UpstreamConfig;
  /** The model's entry; `fallbackModelEntry` itself when nothing matches (its window is a guess). */
  entryFor(model: string): ModelEntry;
}

const namesKept = 4_096;

/** The value of the first pattern matching a name, or `otherwise`'s; answers kept for names seen lately. */
function firstMatch<T>(
  table: ReadonlyArray<readonly [RegExp, T]>,
  otherwise: (name: string) => T,
): (name: string) => T {
  const seen = new Map<string, T>();
  return (name) => {
    const known = seen.get(name);
    if (known !== undefined) return known;
    if (seen.size >= namesKept) seen.clear();
    let value: T | undefined;
    for (const [pattern, candidate] of table) {
      if (pattern.test(name)) {
        value = candidate;
        break;
      }
    }
    value ??= otherwise(name);
    seen.set(name, value);
    return value;
  };
}

/** A config file's model entry as the context engine reads it, its defaults filled in. */
function modelEntryOf(entry: ModelEntryConfig): ModelEntry {
  return Object.freeze({
    match: entry.match,
    window: entry.window,
    outputReserve: entry.output_reserve,
    ...(entry.max_input === undefined ? {} : { maxInput: entry.max_input }),
    tokenizer: entry.tokenizer,
    exactTokenizer: entry.exact_tokenizer,
    toolFormat: entry.tool_format ?? (entry.exact_tokenizer ? 'typescript' : 'json'),
    noticePlacement: entry.notice_placement ?? (entry.exact_tokenizer ? 'inline' : 'user'),
    textToolCalls: entry.text_tool_calls ?? 'read',
    calibration: entry.calibration,
    fallbacks: entry.fallbacks,
  });
}

export function createModelRouting(
  upstreams: readonly UpstreamConfig[],
  models: readonly ModelEntryConfig[],
): ModelRouting {
  const upstreamFor = firstMatch(
    upstreams.map((upstream) => [globToRegExp(upstream.modelGlobs), upstream] as const),
    () => {
      // The default upstream matches '*' and is always last, so this is only reached with an empty list.
      throw new Error('no upstream configured');
    },
  );
  // A router's name (`openai/gpt-5.4`, as OpenRouter and LiteLLM write them) that nothing matches whole
  // is looked up by its last segment.
  const entryFor: (model: string) => ModelEntry = firstMatch(
    [
      ...models.map((entry) => [globToRegExp(entry.match), modelEntryOf(entry)] as const),
      ...builtInModelTable.map((entry) => [globToRegExp(entry.match), entry] as const),
    ],
    (name) => {
      const last = name.slice(name.lastIndexOf('/') + 1);
      return last === name || last === '' ? fallbackModelEntry : entryFor(last);
    },
  );
  return { upstreamFor, entryFor };
}
