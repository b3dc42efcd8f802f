// What the gateway learns about its upstreams' real limits (docs/budgeting.md#what-the-gateway-learns):
// per upstream and model (windows, estimate ratios, the largest size taken) and per tool set (what the
// upstream counts for its definitions), kept as entries the pure rules (context/learned-limit-rules.ts)
// move. Shared by replicas through Redis (in process without it).
//
// No request waits on Redis: every replica reads its own copy. What it observes applies to it at once
// and is written in the background, at most once a second per entry, as a compare-and-set so replicas
// never overwrite each other's lessons: its own copy when Redis still holds what it was built on (a
// write moves no value a request uses), else what it observed (folded) applied to the other replica's
// write. Other replicas follow a change log once a second — one read that returns nothing while
// nothing changes. The entries are bounded: past `maxEntries` the least recently used go, in Redis as
// in process.
import { createHash } from 'node:crypto';
import {
  emptyModelLessons,
  limitFor,
  sharedWindow,
  successTeaches,
  toolTokensFor,
  valueFor,
  withOverflow,
  withRatioSample,
  withSuccess,
  withToolSample,
  evidenceWindow,
  type LearnedLimit,
  type LearningSettings,
  type ModelLessons,
  type OverflowObservation,
  type RatioSample,
  type ToolSetLessons,
} from '../context/learned-limit-rules.js';
import type { FieldFix, FieldFixStore } from '../upstream/field-fixes.js';
import type { RedisConnection } from './redis-client.js';
import { defineScripts, learnedLimitScripts } from './redis-scripts.js';

export type { LearnedLimit } from '../context/learned-limit-rules.js';

/** One entry as the admin endpoint shows it. */
export interface LearnedEntryView {
  id: string;
  kind: 'model' | 'tool_set' | 'field_fixes';
  upstream: string;
  model: string;
  toolSet?: string;
  updatedAt: string;
  /** The window other tenants use (two tenants agreeing), if any. */
  sharedWindow?: number;
  largestAccepted?: number;
  evidence?: Array<{
    tenant: string;
    window: number | undefined;
    stated: number | undefined;
    failed: number | undefined;
    succeeded: number | undefined;
    status: number;
    textClass: string;
    learnedAt: string;
    confirmedAt: string;
    expiresAt: string;
  }>;
  ratio?: { shared: number | undefined; tenants: Array<{ tenant: string; value: number; samples: number }> };
  toolTokens?: {
    shared: number | undefined;
    tenants: Array<{ tenant: string; value: number; samples: number }>;
  };
  /** The request fields the model refused, and what each became (docs/budgeting.md#refused-fields). */
  fieldFixes?: readonly FieldFix[];
}

/** A change an entry went through, for the log line and the metrics. */
export interface LearnedChange {
  kind: 'model' | 'tool_set' | 'reset';
  upstream: string;
  model: string;
  /** The window other tenants use, before and after. */
  sharedWindowBefore: number | undefined;
  sharedWindowAfter: number | undefined;
  tenantsWithEvidence: number;
}

export interface LearnedLimits extends FieldFixStore {
  /**
   * What a tenant's request uses for a model; never waits on a store. May grant one probe per interval;
   * a preview is shown the probe the next request would get, and does not take it.
   */
  get(upstream: string, model: string, tenant: string, use?: { preview?: boolean }): LearnedLimit;
  /** What the upstream counts for a tool set (keyed by a hash of its definitions), for a tenant. */
  toolSetTokens(
    upstream: string,
    model: string,
    toolSet: string,
    tenant: string,
    formula: number,
  ): number | undefined;
  /** An overflow a tenant saw: its numbers already checked against the gateway's count. */
  recordOverflow(upstream: string, model: string, tenant: string, observation: OverflowObservation): void;
  /** A tenant's request of this size (the upstream's prompt count plus the max_tokens sent) went through. */
  recordSuccess(upstream: string, model: string, tenant: string, size: number): void;
  /** A successful answer's prompt count against the gateway's estimate. */
  recordRatio(upstream: string, model: string, tenant: string, sample: RatioSample): void;
  /** What the upstream counted for a tool set (its usage less the messages' estimate). */
  recordToolSetTokens(
    upstream: string,
    model: string,
    toolSet: string,
    tenant: string,
    tokens: number,
    formula: number,
  ): void;
  /** Every entry, for the admin endpoint. */
  list(): LearnedEntryView[];
  /** Forgets one entry (by its id) or all; resolves with how many were forgotten. */
  reset(id?: string): Promise<number>;
  /** True once the shared entries have been read (at once in process). */
  loaded(): boolean;
  /** Writes what is pending (best effort) and stops the background work. */
  close(): Promise<void>;
}

export interface LearnedLimitsOptions {
  settings: LearningSettings;
  /**
   * Each upstream's base URL, by its name: a model's field fixes are kept for the upstream at that URL, so
   * an upstream whose URL changed (another provider under the same name), or another deployment's upstream
   * of the same name sharing the Redis, does not take them.
   */
  upstreamUrls?: ReadonlyMap<string, string>;
  /** Entries kept at most (models and tool sets together); past it the least recently used go. */
  maxEntries: number;
  now?: () => number;
  onChange?: (change: LearnedChange) => void;
}

type Entry =
  | { kind: 'model'; upstream: string; model: string; lessons: ModelLessons; updatedAtMs: number }
  | {
      kind: 'tool_set';
      upstream: string;
      model: string;
      toolSet: string;
      lessons: ToolSetLessons;
      updatedAtMs: number;
    }
  | { kind: 'field_fixes'; upstream: string; model: string; fixes: readonly FieldFix[]; updatedAtMs: number };

type Update = (entry: Entry) => Entry;

const modelId = (upstream: string, model: string) => `m:${upstream}\u0000${model}`;
const toolSetId = (upstream: string, model: string, toolSet: string) =>
  `t:${upstream}\u0000${model}\u0000${toolSet}`;
const urlTagOf = (url: string) => createHash('sha256').update(url).digest('base64url').slice(0, 16);

function newEntry(id: string, upstream: string, model: string, toolSet?: string): Entry {
  if (id.startsWith('f:')) return { kind: 'field_fixes', upstream, model, fixes: [], updatedAtMs: 0 };
  return id.startsWith('t:')
    ? { kind: 'tool_set', upstream, model, toolSet: toolSet ?? '', lessons: { costs: [] }, updatedAtMs: 0 }
    : { kind: 'model', upstream, model, lessons: emptyModelLessons(), updatedAtMs: 0 };
}

const noFixes: readonly FieldFix[] = [];

/** The entries one replica holds, least recently used first, and what its requests observed. */
function createTable(options: LearnedLimitsOptions) {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  /** When this replica last let a request probe an entry's window for a tenant. */
  const probes = new Map<string, number>();

  /** The entry used last: most requests ask for the one the request before asked for. */
  let newest: string | undefined;
  /** How many entries hold field fixes: none for most deployments, and then no lookup is made. */
  let fixEntries = 0;
  const put = (id: string, entry: Entry): void => {
    if (!entries.has(id)) {
      newest = id;
      if (entry.kind === 'field_fixes') fixEntries++;
    }
    entries.set(id, entry);
  };
  const remove = (id: string): void => {
    if (entries.get(id)?.kind === 'field_fixes') fixEntries--;
    entries.delete(id);
    if (newest === id) newest = undefined;
  };
  /** The id of a model's entry. The last is kept: most requests ask for the model the one before did, and
   * a string made once is hashed once. */
  let lastModel: { upstream: string; model: string; id: string } | undefined;
  const modelIdOf = (upstream: string, model: string): string => {
    if (lastModel !== undefined && lastModel.upstream === upstream && lastModel.model === model)
      return lastModel.id;
    lastModel = { upstream, model, id: modelId(upstream, model) };
    return lastModel.id;
  };
  /** The entry, moved to the most recently used end (unless it is there already: no Map churn). */
  const touch = (id: string): Entry | undefined => {
    const entry = entries.get(id);
    if (entry === undefined || id === newest) return entry;
    entries.delete(id);
    entries.set(id, entry);
    newest = id;
    return entry;
  };

  /** Each upstream's URL, hashed once: what a model's field fixes are kept under beside its name. */
  const urlTags = new Map<string, string>();
  let lastFixes: { upstream: string; model: string; id: string } | undefined;
  /** The id of a model's field fixes on an upstream at its URL (LearnedLimitsOptions.upstreamUrls). */
  const fixesIdOf = (upstream: string, model: string): string => {
    if (lastFixes !== undefined && lastFixes.upstream === upstream && lastFixes.model === model)
      return lastFixes.id;
    let tag = urlTags.get(upstream);
    if (tag === undefined) {
      tag = urlTagOf(options.upstreamUrls?.get(upstream) ?? '');
      urlTags.set(upstream, tag);
    }
    lastFixes = { upstream, model, id: `f:${upstream}\u0000${tag}\u0000${model}` };
    return lastFixes.id;
  };

  const sharedOf = (entry: Entry | undefined): number | undefined =>
    entry?.kind === 'model' ? sharedWindow(entry.lessons, now(), options.settings)?.window : undefined;

  /** What a change is told by: the window evidence and the tenants with values (not every sample). */
  const outline = (entry: Entry | undefined): string =>
    entry === undefined || entry.kind === 'field_fixes'
      ? ''
      : entry.kind === 'model'
        ? JSON.stringify([
            entry.lessons.evidence.map((item) => [item.tenant, evidenceWindow(item), item.failed]),
            entry.lessons.ratios.map((item) => item.tenant),
          ])
        : JSON.stringify(entry.lessons.costs.map((item) => item.tenant));

  /** The same outline without writing it out, when only values moved (a ratio sample, the common case). */
  const sameTenants = (a: ReadonlyArray<{ tenant: string }>, b: ReadonlyArray<{ tenant: string }>): boolean =>
    a === b || (a.length === b.length && a.every((item, index) => item.tenant === b[index]?.tenant));
  const sameOutline = (before: Entry | undefined, after: Entry | undefined): boolean => {
    if (
      before?.kind === 'model' &&
      after?.kind === 'model' &&
      before.lessons.evidence === after.lessons.evidence
    )
      return sameTenants(before.lessons.ratios, after.lessons.ratios);
    if (before?.kind === 'tool_set' && after?.kind === 'tool_set')
      return sameTenants(before.lessons.costs, after.lessons.costs);
    return outline(before) === outline(after);
  };

  const report = (before: Entry | undefined, after: Entry | undefined, kind: LearnedChange['kind']) => {
    const subject = after ?? before;
    // A field fix learned or forgotten is told by its own log line (field-fixes.ts loggedFieldFixes).
    if (subject === undefined || subject.kind === 'field_fixes' || options.onChange === undefined) return;
    if (kind !== 'reset' && sameOutline(before, after)) return;
    options.onChange({
      kind,
      upstream: subject.upstream,
      model: subject.model,
      sharedWindowBefore: sharedOf(before),
      sharedWindowAfter: sharedOf(after),
      tenantsWithEvidence:
        after?.kind === 'model'
          ? after.lessons.evidence.filter((item) => evidenceWindow(item) !== undefined).length
          : 0,
    });
  };

  return {
    entries,
    now,
    modelId: modelIdOf,
    fixesId: fixesIdOf,
    get(id: string): Entry | undefined {
      return touch(id);
    },
    /** Applies an update; returns the entry when it changed. */
    apply(id: string, make: () => Entry, update: Update): Entry | undefined {
      const before = touch(id);
      const after = update(before ?? make());
      if (after === before) return undefined;
      put(id, after);
      while (entries.size > options.maxEntries) remove(entries.keys().next().value as string);
      if (after.kind !== 'field_fixes') report(before, after, after.kind);
      return after;
    },
    /** Replaces an entry with what the store holds (undefined: gone). */
    replace(id: string, entry: Entry | undefined): void {
      const before = entries.get(id);
      if (entry === undefined) remove(id);
      else put(id, entry);
      if (before !== undefined && entry === undefined) report(before, undefined, 'reset');
    },
    limit(upstream: string, model: string, tenant: string, preview = false): LearnedLimit {
      const entry = touch(modelIdOf(upstream, model));
      if (entry?.kind !== 'model') return {};
      const limit = limitFor(entry.lessons, tenant, now(), options.settings);
      if (limit.probe === true) {
        // One request per tenant and interval tries the configured window; the others keep the lesson.
        const key = `${tenant}\u0000${upstream}\u0000${model}`;
        const last = probes.get(key) ?? 0;
        if (now() - last < options.settings.reprobeAfterMs) delete limit.probe;
        else if (!preview) {
          if (probes.size >= 10_000) probes.clear();
          probes.set(key, now());
        }
      }
      return limit;
    },
    /** A model's field fixes: an empty list, at once, while no model has any. */
    fixes(upstream: string, model: string): { id: string; fixes: readonly FieldFix[] } | undefined {
      if (fixEntries === 0) return undefined;
      const id = fixesIdOf(upstream, model);
      const entry = touch(id);
      return entry?.kind === 'field_fixes' ? { id, fixes: entry.fixes } : undefined;
    },
    toolTokens(upstream: string, model: string, toolSet: string, tenant: string, formula: number) {
      const entry = touch(toolSetId(upstream, model, toolSet));
      return entry?.kind === 'tool_set' ? toolTokensFor(entry.lessons, tenant, formula) : undefined;
    },
    view(id: string, entry: Entry): LearnedEntryView {
      const settings = options.settings;
      const iso = (ms: number) => new Date(ms).toISOString();
      const base = {
        id,
        kind: entry.kind,
        upstream: entry.upstream,
        model: entry.model,
        updatedAt: iso(entry.updatedAtMs),
      };
      if (entry.kind === 'field_fixes') return Object.assign({}, base, { fieldFixes: entry.fixes });
      if (entry.kind === 'tool_set') {
        const costs = entry.lessons.costs;
        return Object.assign({}, base, {
          toolSet: entry.toolSet,
          toolTokens: {
            shared: valueFor(costs, '\u0000'),
            tenants: costs.map(({ tenant, value, samples }) => ({
              tenant,
              value: Math.round(value),
              samples,
            })),
          },
        });
      }
      const { lessons } = entry;
      const view: LearnedEntryView = Object.assign({}, base, {
        evidence: lessons.evidence.map((item) => ({
          tenant: item.tenant,
          window: evidenceWindow(item),
          stated: item.stated,
          failed: item.failed,
          succeeded: item.succeeded,
          status: item.status,
          textClass: item.textClass,
          learnedAt: iso(item.learnedAtMs),
          confirmedAt: iso(item.confirmedAtMs),
          expiresAt: iso(item.confirmedAtMs + settings.windowTtlMs),
        })),
        ratio: {
          shared: valueFor(lessons.ratios, '\u0000'),
          tenants: lessons.ratios.map(({ tenant, value, samples }) => ({ tenant, value, samples })),
        },
      });
      const shared = sharedWindow(lessons, now(), settings)?.window;
      if (shared !== undefined) view.sharedWindow = shared;
      if (lessons.largestAccepted !== undefined) view.largestAccepted = lessons.largestAccepted;
      return view;
    },
  };
}

type Table = ReturnType<typeof createTable>;

/** The updates of the four kinds of observation. */
const updates = {
  overflow:
    (tenant: string, observation: OverflowObservation, nowMs: number): Update =>
    (entry) => {
      if (entry.kind !== 'model') return entry;
      const lessons = withOverflow(entry.lessons, tenant, observation, nowMs);
      return lessons === entry.lessons ? entry : Object.assign({}, entry, { lessons, updatedAtMs: nowMs });
    },
  success:
    (tenant: string, size: number, nowMs: number): Update =>
    (entry) => {
      if (entry.kind !== 'model') return entry;
      const lessons = withSuccess(entry.lessons, tenant, size);
      return lessons === entry.lessons ? entry : Object.assign({}, entry, { lessons, updatedAtMs: nowMs });
    },
  ratio:
    (tenant: string, sample: RatioSample, nowMs: number): Update =>
    (entry) =>
      entry.kind === 'model'
        ? Object.assign({}, entry, {
            lessons: withRatioSample(entry.lessons, tenant, sample, nowMs),
            updatedAtMs: nowMs,
          })
        : entry,
  fixes:
    (update: (fixes: readonly FieldFix[]) => readonly FieldFix[], nowMs: number): Update =>
    (entry) => {
      if (entry.kind !== 'field_fixes') return entry;
      const fixes = update(entry.fixes);
      return fixes === entry.fixes ? entry : Object.assign({}, entry, { fixes, updatedAtMs: nowMs });
    },
  toolTokens:
    (tenant: string, tokens: number, formula: number, nowMs: number): Update =>
    (entry) =>
      entry.kind === 'tool_set'
        ? Object.assign({}, entry, {
            lessons: withToolSample(entry.lessons, tenant, tokens, formula, nowMs),
            updatedAtMs: nowMs,
          })
        : entry,
};

/** Overflow lessons kept pending per entry while they cannot be written; past it the oldest go. */
export const maxPendingOverflows = 64;

/**
 * The observations not yet written, folded: one ratio sample, one success and one tool-set sample per
 * tenant and entry, and at most `maxPendingOverflows` overflows per entry. Bounded however long Redis
 * is away: what this replica observed is already applied to its own copy, and is written as that copy
 * whenever Redis still holds what the copy was built on.
 */
export function createPending() {
  /** How each entry with pending updates starts when Redis has none yet. */
  const makes = new Map<string, () => Entry>();
  /** When the oldest update pending for each entry was learned: a reset after it refuses the write. */
  const since = new Map<string, number>();
  const ratios = new Map<string, { reported: number; estimated: number }>();
  const successes = new Map<string, number>();
  const toolSamples = new Map<string, { tokens: number; count: number; formula: number }>();
  const others = new Map<string, Update[]>();
  const split = (key: string) => {
    const cut = key.lastIndexOf('\u0001');
    return { id: key.slice(0, cut), tenant: key.slice(cut + 1) };
  };
  const keep = (id: string, list: Update[]): void => {
    others.set(id, list.length > maxPendingOverflows ? list.slice(-maxPendingOverflows) : list);
  };
  /** The folded observations (of one entry, or all) as updates, each with its entry's id. */
  const folded = (nowMs: number, only?: string): Array<[string, Update]> => {
    const out: Array<[string, Update]> = [];
    const each = <T>(map: Map<string, T>, update: (tenant: string, value: T) => Update): void => {
      for (const [key, value] of map) {
        const { id, tenant } = split(key);
        if (only === undefined || id === only) out.push([id, update(tenant, value)]);
      }
    };
    each(successes, (tenant, size) => updates.success(tenant, size, nowMs));
    each(ratios, (tenant, sample) => updates.ratio(tenant, sample, nowMs));
    each(toolSamples, (tenant, sum) =>
      updates.toolTokens(tenant, sum.tokens / sum.count, sum.formula, nowMs),
    );
    return out;
  };
  return {
    makeOf: (id: string): (() => Entry) | undefined => makes.get(id),
    /** An update of `id` learned at `nowMs` follows (before it is added). */
    made(id: string, make: () => Entry, nowMs: number): void {
      makes.set(id, make);
      if (!since.has(id)) since.set(id, nowMs);
    },
    /** When the oldest update pending for each entry was learned; take() starts them again. */
    learnedSince: (): Map<string, number> => new Map(since),
    ratio(id: string, tenant: string, sample: RatioSample): void {
      const key = `${id}\u0001${tenant}`;
      const sum = ratios.get(key) ?? { reported: 0, estimated: 0 };
      ratios.set(key, {
        reported: sum.reported + sample.reported,
        estimated: sum.estimated + sample.estimated,
      });
    },
    success(id: string, tenant: string, size: number): void {
      const key = `${id}\u0001${tenant}`;
      successes.set(key, Math.max(successes.get(key) ?? 0, size));
    },
    toolSample(id: string, tenant: string, tokens: number, formula: number): void {
      const key = `${id}\u0001${tenant}`;
      const sum = toolSamples.get(key) ?? { tokens: 0, count: 0, formula };
      toolSamples.set(key, { tokens: sum.tokens + tokens, count: sum.count + 1, formula });
    },
    overflow(id: string, update: Update): void {
      const list = others.get(id) ?? [];
      list.push(update);
      keep(id, list);
    },
    /** The updates pending for one entry, left pending (what a copy read from Redis lacks). */
    peek(id: string, nowMs: number): Update[] {
      return [...(others.get(id) ?? []), ...folded(nowMs, id).map(([, update]) => update)];
    },
    /** Takes everything pending, as updates per entry. */
    take(nowMs: number): Map<string, Update[]> {
      const byId = new Map<string, Update[]>(others);
      for (const [id, update] of folded(nowMs)) byId.set(id, [...(byId.get(id) ?? []), update]);
      others.clear();
      successes.clear();
      ratios.clear();
      toolSamples.clear();
      since.clear();
      return byId;
    },
    /** Forgets how an entry starts, once nothing is pending for it. */
    written(id: string): void {
      const prefix = `${id}\u0001`;
      if (
        !others.has(id) &&
        ![...successes.keys(), ...ratios.keys(), ...toolSamples.keys()].some((key) => key.startsWith(prefix))
      )
        makes.delete(id);
    },
    /** Drops what waits for an entry (a forgotten one): lessons from before it was forgotten. */
    drop(id: string): void {
      const prefix = `${id}\u0001`;
      others.delete(id);
      makes.delete(id);
      since.delete(id);
      for (const map of [successes, ratios, toolSamples])
        for (const key of [...map.keys()]) if (key.startsWith(prefix)) map.delete(key);
    },
    /** Puts updates that could not be written back, ahead of newer ones, with when they were learned. */
    putBack(pending: Map<string, Update[]>, learnedAt: ReadonlyMap<string, number> = new Map()): void {
      for (const [id, list] of pending) {
        keep(id, [...list, ...(others.get(id) ?? [])]);
        const at = learnedAt.get(id);
        if (at !== undefined) since.set(id, Math.min(at, since.get(id) ?? at));
      }
    },
  };
}

function learnedApi(table: Table, record: (id: string, make: () => Entry, update: Update) => void) {
  return {
    get: (upstream: string, model: string, tenant: string, use?: { preview?: boolean }) =>
      table.limit(upstream, model, tenant, use?.preview === true),
    toolSetTokens: (upstream: string, model: string, toolSet: string, tenant: string, formula: number) =>
      table.toolTokens(upstream, model, toolSet, tenant, formula),
    recordOverflow(upstream: string, model: string, tenant: string, observation: OverflowObservation) {
      const id = table.modelId(upstream, model);
      record(id, () => newEntry(id, upstream, model), updates.overflow(tenant, observation, table.now()));
    },
    fixesOf: (upstream: string, model: string) => table.fixes(upstream, model)?.fixes ?? noFixes,
    updateFixes(
      upstream: string,
      model: string,
      update: (fixes: readonly FieldFix[]) => readonly FieldFix[],
    ) {
      const id = table.fixesId(upstream, model);
      record(id, () => newEntry(id, upstream, model), updates.fixes(update, table.now()));
    },
    list: () => [...table.entries].map(([id, entry]) => table.view(id, entry)),
  };
}

/** In-process learned limits: one replica only. */
export function createMemoryLearnedLimits(options: LearnedLimitsOptions): LearnedLimits {
  const table = createTable(options);
  const record = (id: string, make: () => Entry, update: Update) => void table.apply(id, make, update);
  return {
    ...learnedApi(table, record),
    recordSuccess(upstream, model, tenant, size) {
      const id = table.modelId(upstream, model);
      record(id, () => newEntry(id, upstream, model), updates.success(tenant, size, table.now()));
    },
    recordRatio(upstream, model, tenant, sample) {
      const id = table.modelId(upstream, model);
      record(id, () => newEntry(id, upstream, model), updates.ratio(tenant, sample, table.now()));
    },
    recordToolSetTokens(upstream, model, toolSet, tenant, tokens, formula) {
      const id = toolSetId(upstream, model, toolSet);
      record(
        id,
        () => newEntry(id, upstream, model, toolSet),
        updates.toolTokens(tenant, tokens, formula, table.now()),
      );
    },
    async reset(id) {
      const ids = id === undefined ? [...table.entries.keys()] : table.entries.has(id) ? [id] : [];
      for (const each of ids) table.replace(each, undefined);
      return ids.length;
    },
    loaded: () => true,
    close: async () => undefined,
  };
}

/** Everything learned lives under one hash tag (one slot on a Cluster): entries, index, log, version. */
export const learnedKeyTag = 'ctxgate:{learned}';
const indexKey = `${learnedKeyTag}:index`;
const logKey = `${learnedKeyTag}:log`;
const versionKey = `${learnedKeyTag}:version`;
const entryKeyOf = (id: string) =>
  `${learnedKeyTag}:e:${createHash('sha256').update(id).digest('base64url').slice(0, 24)}`;
/** When the entry was last reset (ms): lessons learned before it are not written. */
const resetMarkOf = (entryKey: string) => `${entryKey}:reset`;
/** Entries not written for this long go from Redis by themselves. */
const entryTtlSeconds = 30 * 24 * 3_600;
/** How long a reset refuses older lessons: longer than any replica keeps a lesson unwritten while it can reach Redis. */
const resetMarkSeconds = 24 * 3_600;

/** An entry as stored: its id with it, so a replica reading the log knows what it is. */
interface StoredEntry {
  id: string;
  entry: Entry;
}

/**
 * Learned limits in Redis. Each replica keeps a copy: read whole at start (the index, then the entries
 * in batches), then kept current by the change log; what it learns is written once a second.
 */
export function createRedisLearnedLimits(
  options: LearnedLimitsOptions & { redis: RedisConnection; refreshMs?: number },
): LearnedLimits {
  const { redis } = options;
  const scripts = defineScripts(redis, learnedLimitScripts);
  const table = createTable(options);
  const pending = createPending();
  /** Entries this replica's requests used since the last write of the index. */
  const used = new Set<string>();
  /** The JSON each entry had when last read from Redis: what a compare-and-set expects. */
  const stored = new Map<string, string>();
  const keyToId = new Map<string, string>();
  let lastLogId: string | undefined;
  let lastVersion = 0;
  let hasLoaded = false;
  let closed = false;
  let running: Promise<void> | undefined;

  const remember = (id: string, json: string | undefined): void => {
    const key = entryKeyOf(id);
    keyToId.set(key, id);
    if (json === undefined) stored.delete(id);
    else stored.set(id, json);
  };

  /**
   * Puts an entry as Redis holds it in the table, with what this replica learned since and has not
   * written yet applied on top: a lesson learned while a write or a read was on the way is not lost
   * until the next write (the next request would not know it).
   */
  const replaceKeepingPending = (id: string, entry: Entry): void => {
    let next = entry;
    for (const update of pending.peek(id, table.now())) next = update(next);
    table.replace(id, next);
  };

  /** Takes an entry as Redis holds it, with this replica's pending updates applied on top. */
  const adopt = (key: string, json: string | null): void => {
    if (json === null) {
      const id = keyToId.get(key);
      if (id !== undefined) {
        // Reset or evicted elsewhere: what this replica learned of it before is not written back.
        if (stored.has(id)) pending.drop(id);
        stored.delete(id);
        table.replace(id, undefined);
      }
      return;
    }
    const parsed = JSON.parse(json) as StoredEntry;
    // This replica's own write read back: its copy already holds it, with what came since applied in order.
    if (stored.get(parsed.id) === json) return;
    remember(parsed.id, json);
    replaceKeepingPending(parsed.id, parsed.entry);
  };

  async function loadAll(): Promise<void> {
    const [version, last] = await Promise.all([
      redis.get(versionKey),
      redis.xrevrange(logKey, '+', '-', 'COUNT', 1),
    ]);
    const keys = await redis.zrange(indexKey, 0, -1);
    for (let start = 0; start < keys.length; start += 500) {
      const batch = keys.slice(start, start + 500);
      const values = batch.length === 0 ? [] : await redis.mget(...batch);
      values.forEach((value, index) => adopt(batch[index] as string, value));
    }
    lastVersion = Number(version ?? '0');
    lastLogId = last[0]?.[0] ?? '0-0';
    hasLoaded = true;
  }

  /**
   * Follows the change log, a batch at a time until it has read all there is; a gap (entries trimmed
   * before this replica read them) reads everything again.
   */
  async function follow(): Promise<void> {
    for (let batch = 0; batch < 50; batch++) if ((await followBatch()) < 1_000) return;
  }

  async function followBatch(): Promise<number> {
    const read = (await redis.xread('COUNT', 1000, 'STREAMS', logKey, lastLogId ?? '0-0')) as Array<
      [string, Array<[string, string[]]>]
    > | null;
    const events = read?.[0]?.[1] ?? [];
    if (events.length === 0) return 0;
    const changedKeys = new Set<string>();
    for (const [eventId, fields] of events) {
      const field = (name: string) => fields[fields.indexOf(name) + 1];
      const version = Number(field('v'));
      if (version > lastVersion + 1) {
        await loadAll();
        return 0;
      }
      lastVersion = Math.max(lastVersion, version);
      lastLogId = eventId;
      const key = field('k');
      if (key !== undefined) changedKeys.add(key);
    }
    const keys = [...changedKeys];
    const values = await redis.mget(...keys);
    values.forEach((value, index) => adopt(keys[index] as string, value));
    return events.length;
  }

  /**
   * Writes one entry's updates as a compare-and-set, reading it again when another replica wrote first.
   * `known` is this replica's own copy when the updates were taken: what Redis held when last read, with
   * exactly these updates applied one by one as they came. While Redis still holds that, the copy is
   * what gets written, so a write moves nothing this replica's requests already use (the updates
   * folded, e.g. ratio samples summed, would give another value).
   */
  async function write(
    id: string,
    list: Update[],
    known?: { expected: string; entry: Entry },
    learnedAt?: number,
  ): Promise<void> {
    const key = entryKeyOf(id);
    for (let attempt = 0; attempt < 4; attempt++) {
      const expected = stored.get(id) ?? '';
      const own = attempt === 0 && known !== undefined && known.expected === expected;
      // From what Redis holds, never from this replica's copy (which already has these updates).
      const base = expected === '' ? undefined : (JSON.parse(expected) as StoredEntry).entry;
      const start = base ?? pending.makeOf(id)?.() ?? table.get(id);
      if (start === undefined) return;
      let next = own ? known.entry : start;
      if (!own) for (const update of list) next = update(next);
      const json = JSON.stringify({ id, entry: next } satisfies StoredEntry);
      if (base !== undefined && (next === start || json === expected)) return;
      const [ok, value] = await writeScript(key, expected, json, entryTtlSeconds, learnedAt);
      if (ok === 2) return refusedAfterReset(id, String(value));
      if (ok === 1) {
        remember(id, json);
        pending.written(id);
        // This replica's copy already holds what was written, and what it learned since on top.
        if (!own) replaceKeepingPending(id, next);
        if (Number(value) > options.maxEntries) await evictOldest(Number(value) - options.maxEntries);
        return;
      }
      // Another replica wrote it first: start again from what it wrote.
      adopt(key, value === '' ? null : String(value));
    }
  }

  /**
   * The entry was reset after the oldest of the lessons just taken for it was learned: they are not
   * written, and this replica's copy becomes what Redis holds (`json`, '' for nothing), with what it
   * learned since the take on top.
   */
  function refusedAfterReset(id: string, json: string): void {
    remember(id, json === '' ? undefined : json);
    pending.written(id);
    const base = json === '' ? pending.makeOf(id)?.() : (JSON.parse(json) as StoredEntry).entry;
    if (base === undefined) table.replace(id, undefined);
    else replaceKeepingPending(id, base);
  }

  interface Taken {
    id: string;
    list: Update[];
    /** This replica's copy as it is now, and what Redis held when it was last read. */
    known: { expected: string; entry: Entry } | undefined;
    /** When the oldest of `list` was learned. */
    learnedAt: number | undefined;
  }

  /**
   * The write script (redis-scripts.ts) on one entry: `json` ('' deletes and marks the reset) if Redis
   * still holds `expected`; `learnedAt`, when the oldest lesson in `json` was learned. Answers
   * [1, entries] when written, [0, current] when Redis held another value, [2, current] when refused as
   * older than a reset.
   */
  function writeScript(
    key: string,
    expected: string,
    json: string,
    ttlSeconds: number,
    learnedAt?: number,
  ): Promise<[number, number | string]> {
    return scripts.write(
      key,
      indexKey,
      logKey,
      versionKey,
      resetMarkOf(key),
      expected,
      json,
      table.now(),
      ttlSeconds,
      learnedAt ?? '',
    ) as Promise<[number, number | string]>;
  }

  /**
   * Deletes whatever Redis holds under `key` (another replica's write since this one last read it
   * included), `expected` being what this replica last read, and marks it reset: lessons learned before
   * now are refused by every replica's next write. True when Redis held the entry.
   */
  async function forgetInRedis(key: string, expected: string): Promise<boolean> {
    let reading = expected;
    for (let attempt = 0; attempt < 4; attempt++) {
      const [ok, current] = await writeScript(key, reading, '', resetMarkSeconds);
      if (ok === 1) return reading !== '';
      reading = String(current);
    }
    return false;
  }

  /** Takes what is pending with this replica's copy of each entry as it is now, for `write`. */
  function takePending(): Taken[] {
    const learnedAt = pending.learnedSince();
    const taken = pending.take(table.now());
    return [...taken].map(([id, list]) => {
      const entry = table.entries.get(id);
      return {
        id,
        list,
        known: entry === undefined ? undefined : { expected: stored.get(id) ?? '', entry },
        learnedAt: learnedAt.get(id),
      };
    });
  }

  async function evictOldest(count: number): Promise<void> {
    const oldest = await redis.zrange(indexKey, 0, count - 1, 'WITHSCORES');
    const keys: string[] = [];
    const scores: string[] = [];
    for (let index = 0; index + 1 < oldest.length; index += 2) {
      keys.push(oldest[index] as string);
      scores.push(oldest[index + 1] as string);
    }
    if (keys.length > 0)
      await scripts.evict(3 + keys.length, indexKey, logKey, versionKey, ...keys, ...scores);
  }

  async function tick(): Promise<void> {
    if (!hasLoaded) {
      await loadAll();
      return;
    }
    const failed = new Map<string, Update[]>();
    const failedAt = new Map<string, number>();
    for (const { id, list, known, learnedAt } of takePending()) {
      try {
        await write(id, list, known, learnedAt);
      } catch {
        failed.set(id, list);
        if (learnedAt !== undefined) failedAt.set(id, learnedAt);
      }
    }
    if (failed.size > 0) pending.putBack(failed, failedAt);
    if (used.size > 0) {
      const members = [...used].map((id) => entryKeyOf(id));
      used.clear();
      const now = table.now();
      await redis.zadd(indexKey, 'XX', ...members.flatMap((member) => [now, member]));
    }
    await follow();
  }

  /** The connection came up while a tick was under way: one more when it ends. */
  let rerun = false;
  const run = (): void => {
    if (running !== undefined || closed) return;
    running = tick()
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
        if (rerun) {
          rerun = false;
          run();
        }
      });
  };
  const timer = setInterval(run, options.refreshMs ?? 1_000);
  timer.unref();
  run();
  // A read that failed while the connection was being made (or remade) is tried again once it is up,
  // not at the next refresh: readiness waits for it.
  const onReady = (): void => {
    if (hasLoaded) return;
    if (running === undefined) run();
    else rerun = true;
  };
  redis.on('ready', onReady);

  const record = (id: string, make: () => Entry, update: Update): void => {
    table.apply(id, make, update);
    pending.made(id, make, table.now());
    pending.overflow(id, update);
  };
  const api = learnedApi(table, record);
  return {
    ...api,
    get(upstream, model, tenant, use) {
      used.add(table.modelId(upstream, model));
      return api.get(upstream, model, tenant, use);
    },
    fixesOf(upstream, model) {
      const found = table.fixes(upstream, model);
      if (found === undefined) return noFixes;
      used.add(found.id);
      return found.fixes;
    },
    recordSuccess(upstream, model, tenant, size) {
      const id = table.modelId(upstream, model);
      const entry = table.get(id);
      // Most successes teach nothing: nothing is written for them.
      if (!successTeaches(entry?.kind === 'model' ? entry.lessons : undefined, tenant, size)) return;
      const make = () => newEntry(id, upstream, model);
      table.apply(id, make, updates.success(tenant, size, table.now()));
      pending.made(id, make, table.now());
      pending.success(id, tenant, size);
    },
    recordRatio(upstream, model, tenant, sample) {
      const id = table.modelId(upstream, model);
      const make = () => newEntry(id, upstream, model);
      table.apply(id, make, updates.ratio(tenant, sample, table.now()));
      pending.made(id, make, table.now());
      pending.ratio(id, tenant, sample);
    },
    recordToolSetTokens(upstream, model, toolSet, tenant, tokens, formula) {
      const id = toolSetId(upstream, model, toolSet);
      const make = () => newEntry(id, upstream, model, toolSet);
      table.apply(id, make, updates.toolTokens(tenant, tokens, formula, table.now()));
      pending.made(id, make, table.now());
      pending.toolSample(id, tenant, tokens, formula);
    },
    async reset(id) {
      // One entry by its id, known here or not; or every entry this replica knows and every one Redis
      // lists (another replica's, written since this one last read, included).
      const keys = new Map<string, string | undefined>();
      for (const each of id === undefined ? table.entries.keys() : [id]) keys.set(entryKeyOf(each), each);
      if (id === undefined)
        for (const key of await redis.zrange(indexKey, 0, -1))
          if (!keys.has(key)) keys.set(key, keyToId.get(key));
      let forgotten = 0;
      for (const [key, each] of keys) {
        // What this replica learned of it before the reset is not written after it.
        if (each !== undefined) pending.drop(each);
        const held = await forgetInRedis(key, each === undefined ? '' : (stored.get(each) ?? ''));
        if (held || (each !== undefined && table.entries.has(each))) forgotten++;
        if (each === undefined) continue;
        remember(each, undefined);
        table.replace(each, undefined);
      }
      return forgotten;
    },
    loaded: () => hasLoaded,
    async close() {
      clearInterval(timer);
      redis.off('ready', onReady);
      await running;
      closed = true;
      for (const { id, list, known, learnedAt } of takePending())
        await write(id, list, known, learnedAt).catch(() => undefined);
    },
  };
}
