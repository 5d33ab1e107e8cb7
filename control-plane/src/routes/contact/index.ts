import type { FastifyInstance } from 'fastify';
import { CONTACT_TOPICS, purgeOldContacts, receiveContact } from '../../contact/contact.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { html, page } from '../../pages/layout.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import { isHtmlFormPost } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';

const TOPIC_LABELS: Record<(typeof CONTACT_TOPICS)[number], MessageKey> = {
  general: 'contact.topic.general',
  security: 'contact.topic.security',
  privacy: 'contact.topic.privacy',
  abuse: 'contact.topic.abuse',
  support: 'contact.topic.support',
};

function contactPage(nonce: string, ui: PageUi, max: number, sent: boolean) {
  const { t } = ui;
  return page({
    title: t('contact.title'),
    nonce,
    ui,
    scripts: ['/assets/forms.js'],
    body: html`<h1>${t('contact.heading')}</h1>
${sent ? html`<p role="status" data-state="sent">${t('contact.sent')}</p>` : ''}
<p id="form-status" role="status" aria-live="polite"></p>
<form method="post" action="/contact" data-kp-post data-then="contact" aria-labelledby="contact-h">
<h2 id="contact-h">${t('contact.form_heading')}</h2>
<label for="contact-email">${t('contact.email')}</label>
<input id="contact-email" name="email" type="email" required maxlength="254" autocomplete="email" aria-describedby="contact-email-hint">
<p id="contact-email-hint" class="muted">${t('contact.email_hint')}</p>
<label for="contact-topic">${t('contact.topic')}</label>
<select id="contact-topic" name="topic" required>${CONTACT_TOPICS.map((topic) => html`<option value="${topic}">${t(TOPIC_LABELS[topic])}</option>`)}</select>
<label for="contact-message">${t('contact.message')}</label>
<textarea id="contact-message" name="message" required rows="8" maxlength="${max}" aria-describedby="contact-message-hint"></textarea>
<p id="contact-message-hint" class="muted">${t('contact.message_hint', { max })}</p>
<button type="submit" data-action="contact">${t('contact.send')}</button>
</form>`,
  });
}

/** The contact channel (docs/contact.md): a form page and one POST taking the form or JSON. */
export default async function contactRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const purge = setInterval(() => void purgeOldContacts(services).catch(() => undefined), 3_600_000).unref();
  app.addHook('onClose', async () => clearInterval(purge));

  app.get(
    '/contact',
    {
      schema: {
        tags: ['contact'],
        summary: 'The contact form (HTML)',
        querystring: { type: 'object', properties: { sent: { type: 'string', maxLength: 100 } } },
      },
    },
    async (request, reply) => {
      reply.type('text/html; charset=utf-8');
      return contactPage(
        request.kp.cspNonce,
        uiOf(request),
        services.config.contact.maxMessageChars,
        (request.query as { sent?: string }).sent !== undefined,
      );
    },
  );

  app.post(
    '/contact',
    {
      schema: {
        tags: ['contact'],
        summary:
          'Send the operator a message (JSON or form): validated, size-capped, throttled per client and sender address, stored, mailed and receipted',
        body: {
          type: 'object',
          required: ['email', 'topic', 'message'],
          additionalProperties: false,
          properties: {
            email: { type: 'string', maxLength: 254 },
            topic: { type: 'string', enum: [...CONTACT_TOPICS] },
            message: {
              type: 'string',
              description: `At most contact.maxMessageChars characters (default 4000); longer is 413 message_too_long`,
            },
          },
        },
        response: {
          200: okObject({ contactId: { type: 'string' }, mailed: { type: 'boolean' }, receipt: receiptField }, [
            'contactId',
            'mailed',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const result = await receiveContact(
        services,
        request.body as { email: string; topic: string; message: string },
        request.ip,
      );
      if (isHtmlFormPost(request)) return reply.redirect(`/contact?sent=${encodeURIComponent(result.contactId)}`, 303);
      return { ok: true, ...result };
    },
  );
}
