// Reading what valgrind's callgrind wrote: a dump's total instruction count, and its self cost per
// function, with the names of V8's generated code taken from the map `node --perf-basic-prof` writes
// (/tmp/perf-<pid>.map), so a JavaScript function shows by its name and source position rather than
// as an address. Used by the `instructions` section; the format is valgrind's "Callgrind Format
// Specification" (callgrind_annotate reads the same files).
import { existsSync, readFileSync } from 'node:fs';

/** The dump's total instructions (its `summary:` line, else its `totals:` line). */
export function dumpTotal(text: string): number {
  const line = /^summary: (\d+)/m.exec(text) ?? /^totals: (\d+)/m.exec(text);
  if (line === null) throw new Error('not a callgrind dump: no summary or totals line');
  return Number(line[1]);
}

interface CodeRange {
  start: number;
  size: number;
  name: string;
}

/** The generated code ranges of a process, sorted by start: `<hex start> <hex size> <name>` per line. */
export function readPerfMap(path: string): CodeRange[] {
  if (!existsSync(path)) return [];
  const ranges: CodeRange[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (match !== null)
      ranges.push({
        start: parseInt(match[1] as string, 16),
        size: parseInt(match[2] as string, 16),
        name: match[3] as string,
      });
  }
  return ranges.sort((left, right) => left.start - right.start);
}

function rangeName(ranges: readonly CodeRange[], address: number): string | undefined {
  let low = 0;
  let high = ranges.length - 1;
  let found: CodeRange | undefined;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const range = ranges[middle] as CodeRange;
    if (range.start <= address) {
      found = range;
      low = middle + 1;
    } else high = middle - 1;
  }
  return found !== undefined && address < found.start + found.size ? found.name : undefined;
}

/** A position field of a cost line: absolute (0x…), relative to the previous one (+n, -n) or the same (*). */
function position(field: string, previous: number): number {
  if (field === '*') return previous;
  if (field.startsWith('+')) return previous + parseInt(field.slice(1), 16);
  if (field.startsWith('-')) return previous - parseInt(field.slice(1), 16);
  return parseInt(field, 16);
}

/**
 * Self cost per function of a dump written with `--dump-instr=yes` (positions "instr line", one event,
 * Ir): native functions by their symbol and object, generated code by the perf map's name. The cost a
 * function spends in what it calls is its callees', as callgrind_annotate's self cost.
 */
export function selfCosts(text: string, ranges: readonly CodeRange[]): Map<string, number> {
  const names = new Map<string, string>();
  const costs = new Map<string, number>();
  let functionName = '';
  let objectName = '';
  let afterCalls = false;
  let address = 0;
  for (const line of text.split('\n')) {
    const naming = /^(c?)(fn|ob|fl|fi|fe)=\((\d+)\)(?: (.*))?$/.exec(line);
    if (naming !== null) {
      const key = `${naming[2]}:${naming[3]}`;
      if (naming[4] !== undefined) names.set(key, naming[4]);
      if (naming[1] === '' && naming[2] === 'fn') functionName = names.get(key) ?? '';
      if (naming[1] === '' && naming[2] === 'ob') objectName = names.get(key) ?? '';
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCalls = true;
      continue;
    }
    const first = line.charCodeAt(0);
    // Cost lines start with a position: 0x…, +, - or *.
    if (!(line.startsWith('0x') || first === 43 || first === 45 || first === 42)) continue;
    const fields = line.split(' ');
    address = position(fields[0] as string, address);
    // The line after calls= is the call's inclusive cost: the callee's, not this function's.
    if (afterCalls) {
      afterCalls = false;
      continue;
    }
    const generated = objectName.endsWith('???') || /^0x[0-9a-f]+$/.test(functionName);
    const name = generated
      ? `JS ${rangeName(ranges, address) ?? '(generated code without a name)'}`
      : `${functionName} [${objectName.split('/').pop() ?? objectName}]`;
    costs.set(name, (costs.get(name) ?? 0) + Number(fields[2] ?? 0));
  }
  return costs;
}
