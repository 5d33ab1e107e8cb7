/**
 * Progressive enhancement for configuration snippets: a "Copy" button next to each
 * `<pre data-copy>`, added only when the Clipboard API is there, with the outcome announced.
 */
export const COPY_JS = String.raw`
for (const pre of document.querySelectorAll('pre[data-copy]')) {
  if (!navigator.clipboard) break;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'secondary';
  button.textContent = 'Copy configuration';
  const status = document.createElement('span');
  status.setAttribute('role', 'status');
  status.className = 'muted';
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(pre.textContent);
      status.textContent = ' Copied.';
    } catch {
      status.textContent = ' Copying failed: select the text and copy it.';
    }
  });
  pre.after(button, status);
}
`;
