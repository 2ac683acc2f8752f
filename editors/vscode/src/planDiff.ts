/**
 * The before and after text of each file of a plan's diff, for a side-by-side view.
 *
 * `plan/diff` sends hunks, not whole files. The file on disk is one side: before an
 * apply it is the old side (the hunks turn it into the new one), after an apply it
 * is the new side (the hunks run backwards). When the disk matches neither, only
 * the hunks are shown. Lines split on `\n` alone and keep their endings, as the
 * server splits them, so CRLF files and a missing final newline survive.
 */

export const NO_NEWLINE = '\\ No newline at end of file';

export interface Hunk {
  old_start: number;
  old_lines: number;
  new_start: number;
  new_lines: number;
  header: string;
  lines: string[];
}

export interface DiffFile {
  path: string;
  status: 'added' | 'deleted' | 'modified';
  binary: boolean;
  truncated: boolean;
  rewritten: boolean;
  additions: number;
  deletions: number;
  old_mode: number | null;
  new_mode: number | null;
  hunks: Hunk[];
}

export interface DiffResult {
  plan_id: string;
  diff: string;
  files: DiffFile[];
  stats?: { files: number; additions: number; deletions: number; truncated_files: number };
}

export interface FileSides {
  path: string;
  before: string;
  after: string;
  /** How the sides were made: from the disk (either way round), or from the hunks alone. */
  source: 'disk-before' | 'disk-after' | 'hunks' | 'none';
}

export function splitLines(text: string): string[] {
  const parts = text.split('\n');
  const lines = parts.slice(0, -1).map((part) => part + '\n');
  if (parts[parts.length - 1]) {
    lines.push(parts[parts.length - 1]);
  }
  return lines;
}

/** A hunk's old and new lines, endings restored. */
export function hunkSides(hunk: Hunk): { old: string[]; new: string[] } {
  const old: string[] = [];
  const added: string[] = [];
  let previous: string[][] = []; // the sides the previous line went to
  for (const line of hunk.lines) {
    if (line === NO_NEWLINE) {
      for (const side of previous) {
        side[side.length - 1] = side[side.length - 1].replace(/\n$/, '');
      }
      continue;
    }
    const text = line.slice(1) + '\n';
    previous = line[0] === ' ' ? [old, added] : line[0] === '-' ? [old] : line[0] === '+' ? [added] : [];
    previous.forEach((side) => side.push(text));
  }
  return { old, new: added };
}

/** The hunks applied to `lines` (old to new, or backwards): undefined when they do not fit. */
export function applyHunks(lines: string[], hunks: Hunk[], backwards = false): string[] | undefined {
  const out: string[] = [];
  let at = 0;
  for (const hunk of hunks) {
    const sides = hunkSides(hunk);
    const [from, to] = backwards ? [sides.new, sides.old] : [sides.old, sides.new];
    const [start, count] = backwards ? [hunk.new_start, hunk.new_lines] : [hunk.old_start, hunk.old_lines];
    const index = count === 0 ? start : start - 1; // an empty range names the line before it
    if (index < at || index + from.length > lines.length || from.length !== count) {
      return undefined;
    }
    if (from.some((line, i) => lines[index + i] !== line)) {
      return undefined;
    }
    out.push(...lines.slice(at, index), ...to);
    at = index + from.length;
  }
  out.push(...lines.slice(at));
  return out;
}

function note(file: DiffFile): string | undefined {
  if (file.binary) {
    return `${file.path}: binary file, not shown\n`;
  }
  if (file.truncated) {
    return `${file.path}: the diff is too large to show (+${file.additions} -${file.deletions})\n`;
  }
  return undefined;
}

/** Both sides of one file. `disk` is the file's text now (undefined: there is none). */
export function fileSides(file: DiffFile, disk: string | undefined, diskIsNew = false): FileSides {
  const text = note(file);
  if (text !== undefined) {
    return { path: file.path, before: text, after: text, source: 'none' };
  }
  const lines = splitLines(disk ?? '');
  const attempts: Array<[boolean, FileSides['source']]> = diskIsNew
    ? [[true, 'disk-after'], [false, 'disk-before']]
    : [[false, 'disk-before'], [true, 'disk-after']];
  for (const [backwards, source] of attempts) {
    // An added file has no old side on disk, a deleted one no new side.
    const missing = backwards ? file.status === 'deleted' : file.status === 'added';
    const other = missing && lines.length ? undefined : applyHunks(lines, file.hunks, backwards);
    if (other !== undefined) {
      const [before, after] = backwards ? [other, lines] : [lines, other];
      return { path: file.path, before: before.join(''), after: after.join(''), source };
    }
  }
  const separator = '⋯\n';
  const olds = file.hunks.map((hunk) => hunkSides(hunk).old.join(''));
  const news = file.hunks.map((hunk) => hunkSides(hunk).new.join(''));
  return { path: file.path, before: olds.join(separator), after: news.join(separator), source: 'hunks' };
}
