/**
 * Member names a JSON text spells ambiguously. `JSON.parse` keeps the last of two equal names,
 * other parsers the first, and Go's `encoding/json` (and others) match struct fields ignoring case
 * (with Unicode folding: `ſ` is `s`, `K` is `k`), so `{"method": "a", "Method": "b"}` reads one way
 * at the gateway and another at the app (RFC 8259 §4: names SHOULD be unique). Pure.
 */

/** A name folded as the most lenient common parser compares it. */
export function foldMemberName(name: string): string {
  return name.toUpperCase().toLowerCase();
}

/**
 * The first member name that repeats within one object of `text` (exactly or folded), or null.
 * `text` must already be valid JSON (`JSON.parse` succeeded): the scan only follows its structure.
 */
export function findRepeatedMember(text: string): string | null {
  // One frame per open object or array: an object's names so far, and whether a name comes next.
  const frames: Array<{ names: Set<string> | null; expectName: boolean }> = [];
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '{') frames.push({ names: new Set(), expectName: true });
    else if (char === '[') frames.push({ names: null, expectName: false });
    else if (char === '}' || char === ']') frames.pop();
    else if (char === ',') {
      const top = frames.at(-1);
      if (top?.names) top.expectName = true;
    } else if (char === ':') {
      const top = frames.at(-1);
      if (top) top.expectName = false;
    } else if (char === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const top = frames.at(-1);
      if (top?.names && top.expectName) {
        // Escapes decoded: `"m\u0065thod"` is `method`.
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        const folded = foldMemberName(name);
        if (top.names.has(folded)) return name;
        top.names.add(folded);
      }
      i = end;
    }
  }
  return null;
}

/** The first own name of `value` that folds to one of `members` without being spelled as it is (`Method`); or null. */
export function findCaseVariantMember(value: object, members: readonly string[]): string | null {
  for (const name of Object.keys(value)) {
    if (members.includes(name)) continue;
    if (members.includes(foldMemberName(name))) return name;
  }
  return null;
}
