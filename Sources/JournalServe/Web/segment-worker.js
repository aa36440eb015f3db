// A worker of the drawing page (connection.mjs): decodes catch-up messages with the page's own
// reader, so the page's main thread folds one message while the next ones are decoded. The
// columns go back transferred, not copied.
'use strict';
importScripts('/assets/segment-reader.js');

self.onmessage = (event) => {
  StrokeJournalSegments.decode(event.data.bytes).then((message) => {
    const moved = [];
    for (const block of message.blocks) {
      for (const name of ['kinds', 'lamports', 'walls', 'strokeRefs', 'styleRefs', 'flags', 'xs', 'ys', 'pressures', 'times']) {
        if (ArrayBuffer.isView(block[name])) moved.push(block[name].buffer);
      }
    }
    self.postMessage({ id: event.data.id, message: message }, moved);
  }, (error) => { self.postMessage({ id: event.data.id, error: String(error && error.message || error) }); });
};
