// The relay's front page (`/`): a form that opens a board by name, and the boards open now
// (`/boards.json`, which lists them only on a relay started with --open: on one that needs
// tokens, board names are not everyone's to read).
'use strict';
(function () {
  const form = document.getElementById('open');
  const name = document.getElementById('name');
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (name.checkValidity()) location.href = '/boards/' + encodeURIComponent(name.value);
  });
  const list = document.getElementById('boards');
  fetch('/boards.json', { cache: 'no-store' }).then((reply) => reply.json()).then((answer) => {
    list.textContent = '';
    if (!answer.listed) {
      list.appendChild(document.createElement('li')).textContent = 'not listed: this relay needs tokens';
      return;
    }
    if (!answer.boards.length) list.appendChild(document.createElement('li')).textContent = 'none yet';
    for (const board of answer.boards) {
      const link = document.createElement('a');
      link.href = '/boards/' + encodeURIComponent(board);
      link.textContent = board;
      list.appendChild(document.createElement('li')).appendChild(link);
    }
  }, () => { list.textContent = ''; list.appendChild(document.createElement('li')).textContent = 'the list could not be read'; });
})();
