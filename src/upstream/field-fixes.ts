// Request fields a model refuses, and what the gateway sends instead (docs/budgeting.md#refused-fields).
// OpenAI's reasoning models refuse `max_tokens` ("Use 'max_completion_tokens' instead") and any
// `temperature` but 1. The gateway tells most of them by name (model-family.ts); one served under another
// name (an Azure deployment can be called anything) is found by its refusal: the request goes again
// with the field renamed or left out, and the model's fix is kept for its later requests.

/** A field to rename (its value kept), or to leave out when `renameTo` is undefined. */
export interface FieldFix {
  field: string;
  renameTo?: string;
}

/**
 * The body with each fix applied: a field renamed (unless the body already has the new name) or left
 * out. The same object when no fix changes it; a new one otherwise (the caller's is not touched).
 */
export function applyFieldFixes<B extends object>(body: B, fixes: readonly FieldFix[]): B {
  let fixed: Record<string, unknown> | undefined;
  for (const { field, renameTo } of fixes) {
    const current = fixed ?? (body as Record<string, unknown>);
    if (current[field] === undefined || current[field] === null) continue;
    fixed ??= Object.assign({}, body) as Record<string, unknown>;
    if (renameTo !== undefined && (fixed[renameTo] === undefined || fixed[renameTo] === null))
      fixed[renameTo] = fixed[field];
    delete fixed[field];
  }
  return (fixed ?? body) as B;
}

export interface FieldFixes {
  /** The fixes learned for a model on an upstream; an empty list for most. */
  fixesFor(upstream: string, model: string): readonly FieldFix[];
  /** Keeps a fix for the model; true when it was not known yet. */
  remember(upstream: string, model: string, fix: FieldFix): boolean;
}

const none: readonly FieldFix[] = [];

/** Models whose fixes a process keeps: far more than any deployment serves. */
export const fieldFixEntries = 1_000;

/**
 * Fixes kept in the process, for at most `maxEntries` models (the least recently learned forgotten
 * first). Each replica learns a model's fix from its own first refusal: one extra upstream call.
 */
export function createFieldFixes(options: { maxEntries: number }): FieldFixes {
  const byModel = new Map<string, readonly FieldFix[]>();
  const keyOf = (upstream: string, model: string) => `${upstream}\u0000${model}`;
  return {
    fixesFor(upstream, model) {
      if (byModel.size === 0) return none;
      return byModel.get(keyOf(upstream, model)) ?? none;
    },
    remember(upstream, model, fix) {
      const key = keyOf(upstream, model);
      const known = byModel.get(key) ?? none;
      if (known.some((kept) => kept.field === fix.field)) return false;
      byModel.delete(key);
      byModel.set(key, [...known, fix]);
      if (byModel.size > options.maxEntries) byModel.delete(byModel.keys().next().value as string);
      return true;
    },
  };
}
