import { DOMParser, type Document, type Element } from '@xmldom/xmldom';

/**
 * XML from the outside, parsed with no way to expand anything: a document that declares a DTD
 * (the carrier of entity expansion and external entities) is refused before parsing, xmldom
 * resolves no external resources, and any parser warning or error refuses the document.
 */
export class SamlXmlError extends Error {
  override readonly name = 'SamlXmlError';
}

export const MAX_XML_BYTES = 256 * 1024;

export function parseXml(text: string): Document {
  if (text.length > MAX_XML_BYTES) throw new SamlXmlError('the XML document is too large');
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new SamlXmlError('DTDs and entity declarations are refused');
  let document: Document;
  try {
    document = new DOMParser({
      onError: (level, message) => {
        throw new SamlXmlError(`XML ${level}: ${String(message).slice(0, 120)}`);
      },
    }).parseFromString(text, 'text/xml');
  } catch (error) {
    throw error instanceof SamlXmlError ? error : new SamlXmlError('the XML document does not parse');
  }
  if (!document.documentElement) throw new SamlXmlError('the XML document has no root element');
  return document;
}

/** Direct children of `parent` with this namespace and local name. */
export function childElements(parent: Element, namespace: string, localName: string): Element[] {
  const found: Element[] = [];
  for (let node = parent.firstChild; node; node = node.nextSibling) {
    if (node.nodeType === 1) {
      const element = node as Element;
      if (element.namespaceURI === namespace && element.localName === localName) found.push(element);
    }
  }
  return found;
}

/** The one direct child, or null when there is none; two are a refusal (no ambiguity to exploit). */
export function onlyChild(parent: Element, namespace: string, localName: string): Element | null {
  const found = childElements(parent, namespace, localName);
  if (found.length > 1) throw new SamlXmlError(`more than one ${localName}`);
  return found[0] ?? null;
}

export function textOf(element: Element | null): string | undefined {
  const text = element?.textContent?.trim();
  return text ? text : undefined;
}
