/* The web app's service worker: shows the service's push notifications (signals, resolutions) and opens the app. */
self.addEventListener('push', (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { title: 'Skill analytics', body: event.data ? event.data.text() : '' };
  }
  const title = data.title || 'Skill analytics';
  event.waitUntil(self.registration.showNotification(title, { body: data.body || '', data: { url: data.url || '/' } }));
});
self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(self.clients.openWindow(event.notification.data && event.notification.data.url ? event.notification.data.url : '/'));
});
