import { Parser } from 'htmlparser2';

export interface HtmlFacts {
  /** `<meta http-equiv="Content-Security-Policy" content>` values, in document order. */
  metaCsp: string[];
  /** The last `<meta name="referrer" content>` value, if any. */
  metaReferrer: string | null;
  /** Every `<script>` element's attributes (lower-cased names, decoded values). */
  scripts: Array<Record<string, string>>;
}

/**
 * Reads what the posture tests need from an HTML body with a real (forgiving, WHATWG-like)
 * tokenizer: meta policies and script elements. Never throws on malformed markup.
 */
export function readHtmlFacts(html: string): HtmlFacts {
  const facts: HtmlFacts = { metaCsp: [], metaReferrer: null, scripts: [] };
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (name === 'script') facts.scripts.push(attributes);
        if (name !== 'meta') return;
        const content = attributes['content'];
        if (content === undefined) return;
        const equiv = attributes['http-equiv']?.trim().toLowerCase();
        if (equiv === 'content-security-policy') {
          if (content) facts.metaCsp.push(content);
        } else if (equiv === undefined && attributes['name']?.trim().toLowerCase() === 'referrer' && content) {
          facts.metaReferrer = content;
        }
      },
    },
    { lowerCaseTags: true, lowerCaseAttributeNames: true, decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return facts;
}

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

/** Whether a Content-Type names HTML; a missing type is treated as HTML, as browsers sniff it. */
export function isHtmlContentType(contentType: string | null): boolean {
  const mime = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  return mime === '' || HTML_TYPES.has(mime);
}
