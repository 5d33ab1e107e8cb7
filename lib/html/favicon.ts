/**
 * The Keyplane icon (a key on a rounded square), served as `/favicon.svg` and `/favicon.ico` by the
 * control plane and the demo app. An SVG file loaded by `<link rel="icon">` runs no script, and
 * `img-src 'self'` in the page CSP already allows it.
 */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#0b57d0"/>
<circle cx="11" cy="16" r="5.5" fill="none" stroke="#fff" stroke-width="3"/>
<path d="M16.5 16H27M23 16v4.5M26.5 16v3" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/>
</svg>
`;
