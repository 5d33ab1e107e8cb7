/** One change line under a version: its Keep-a-Changelog section (`added`, `fixed`, …) and text. */
export interface ChangelogChange {
  type: string;
  text: string;
}

export interface ChangelogVersion {
  version: string;
  /** ISO 8601 date (YYYY-MM-DD), or null for `Unreleased`. */
  date: string | null;
  changes: ChangelogChange[];
}

export class ChangelogFormatError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`CHANGELOG.md line ${line}: ${message}`);
    this.name = 'ChangelogFormatError';
  }
}

// https://keepachangelog.com/en/1.1.0/: "## [1.2.3] - 2026-11-23", "## [Unreleased]", brackets optional.
const VERSION = /^##\s+\[?([^\]\s]+)\]?(?:\s+[-–—]\s+(\d{4}-\d{2}-\d{2}))?\s*(?:\[YANKED\])?\s*$/i;
const SECTION = /^###\s+(.+?)\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const LINK_DEFINITION = /^\s{0,3}\[[^\]]+\]:\s*\S+/;

/**
 * Parses a Keep-a-Changelog file: `## [version] - date` headings, `### Added|Changed|…`
 * sections, and `-` bullets whose continuation lines (indented or not, until a blank line or the
 * next bullet) belong to them. Anything before the first version (title, preamble) and link
 * reference definitions are ignored; a bullet outside a version is an error, as is a version
 * without a date other than `Unreleased`, a repeated version or a malformed date.
 */
export function parseKeepAChangelog(markdown: string): ChangelogVersion[] {
  const versions: ChangelogVersion[] = [];
  const seen = new Set<string>();
  let current: ChangelogVersion | null = null;
  let section = 'changed';
  let open: ChangelogChange | null = null;
  const lines = markdown.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.replace(/\s+$/, '');
    const n = i + 1;
    if (/^#\s/.test(line) || LINK_DEFINITION.test(line) || /^<!--.*-->$/.test(line.trim())) {
      open = null;
      return;
    }
    const version = VERSION.exec(line);
    if (version) {
      const [, name, date] = version as unknown as [string, string, string | undefined];
      const unreleased = name.toLowerCase() === 'unreleased';
      if (!unreleased && !date)
        throw new ChangelogFormatError(`version ${name} has no date ("## [${name}] - YYYY-MM-DD")`, n);
      if (date && Number.isNaN(Date.parse(`${date}T00:00:00Z`)))
        throw new ChangelogFormatError(`${date} is not a date`, n);
      if (seen.has(name)) throw new ChangelogFormatError(`version ${name} appears twice`, n);
      seen.add(name);
      current = { version: unreleased ? 'Unreleased' : name, date: date ?? null, changes: [] };
      versions.push(current);
      section = 'changed';
      open = null;
      return;
    }
    if (/^##\s/.test(line))
      throw new ChangelogFormatError(`"${line}" is not a version heading ("## [x.y.z] - YYYY-MM-DD")`, n);
    const heading = SECTION.exec(line);
    if (heading) {
      section = heading[1]!.toLowerCase();
      open = null;
      return;
    }
    if (line.trim() === '') {
      open = null;
      return;
    }
    const bullet = BULLET.exec(line);
    const target = current as ChangelogVersion | null;
    if (bullet) {
      if (!target) throw new ChangelogFormatError('a change before the first version heading', n);
      open = { type: section, text: bullet[1]!.trim() };
      target.changes.push(open);
      return;
    }
    const continued = open as ChangelogChange | null;
    if (continued) continued.text = `${continued.text} ${line.trim()}`;
    // Prose between a version heading and its sections is not a change; it is left out.
  });
  return versions;
}
