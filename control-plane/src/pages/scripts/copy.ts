/**
 * Progressive enhancement for configuration snippets: a "Copy" button next to each
 * `<pre data-copy>`, added only when the Clipboard API is there, with the outcome announced. Its
 * lines come translated in the element's `data-msg-*` attributes (docs/i18n.md).
 */
export const COPY_JS = String.raw`
for (const pre of document.querySelectorAll('pre[data-copy]')) {
  if (!navigator.clipboard) break;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'secondary';
  button.textContent = pre.dataset.msgCopy || 'Copy configuration';
  const status = document.createElement('span');
  status.setAttribute('role', 'status');
  status.className = 'muted';
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(pre.textContent);
      status.textContent = ' ' + (pre.dataset.msgCopied || 'Copied.');
    } catch {
      status.textContent = ' ' + (pre.dataset.msgCopyFailed || 'Copying failed: select the text and copy it.');
    }
  });
  pre.after(button, status);
}
`;
