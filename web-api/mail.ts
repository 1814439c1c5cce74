/**
 * Outgoing mail. With SMTP_URL set, mail goes through nodemailer's SMTP transport; without it (development) the
 * message is written to the log and the magic-link response carries `dev_link`, so sign-in works with no mail
 * server. Production (NODE_ENV=production) refuses to start magic links without SMTP.
 */
import nodemailer from 'nodemailer';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  /** true when links may be returned to the caller instead of (as well as) being mailed: development only */
  readonly devLinks: boolean;
  /** false when mail cannot be sent at all */
  readonly available: boolean;
  send(m: OutgoingMail): Promise<void>;
}

export function smtpMailer(url: string, from: string): Mailer {
  const transport = nodemailer.createTransport(url);
  return {
    devLinks: false,
    available: true,
    async send(m) {
      await transport.sendMail({ from, ...m });
    },
  };
}

export function devMailer(log: (line: string) => void = (l) => console.log(l)): Mailer {
  return {
    devLinks: true,
    available: true,
    async send(m) {
      log(`[mail:dev] to=${m.to} subject=${JSON.stringify(m.subject)}\n${m.text}`);
    },
  };
}

export const NO_MAIL: Mailer = { devLinks: false, available: false, send: async () => {} };

/** The mailer the environment asks for. */
export function mailerFromEnv(env: NodeJS.ProcessEnv): Mailer {
  if (env.SMTP_URL) return smtpMailer(env.SMTP_URL, env.MAIL_FROM ?? 'Skill Analytics <no-reply@localhost>');
  return env.NODE_ENV === 'production' ? NO_MAIL : devMailer();
}

export function magicLinkMail(to: string, link: string, ttlMinutes: number): OutgoingMail {
  const esc = link.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;');
  return {
    to,
    subject: 'Your sign-in link',
    text: `Sign in: ${link}\n\nThe link works once and expires in ${ttlMinutes} minutes. If you did not ask for it, ignore this mail.`,
    html: `<p><a href="${esc}">Sign in</a></p><p>The link works once and expires in ${ttlMinutes} minutes. If you did not ask for it, ignore this mail.</p>`,
  };
}

export function emailChangeMail(to: string, link: string, ttlMinutes: number): OutgoingMail {
  const esc = link.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;');
  return {
    to,
    subject: 'Confirm your new email address',
    text: `Confirm this address for your account: ${link}\n\nThe link works once and expires in ${ttlMinutes} minutes. If you did not ask for it, ignore this mail.`,
    html: `<p><a href="${esc}">Confirm this address</a> for your account.</p><p>The link works once and expires in ${ttlMinutes} minutes. If you did not ask for it, ignore this mail.</p>`,
  };
}
