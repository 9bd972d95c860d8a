#!/usr/bin/env python3
"""The operator console (/admin) in headless Chromium against a running gateway.

Standard library only: a small WebSocket client speaks the DevTools protocol, so the check
needs no PyPI package. scripts/console-check.sh starts the gateway, sends the requests whose
counts it passes here, and runs this; this starts Chromium itself and stops it (by its pid).

Checks: the login form, a wrong token refused with a message, the totals in Persian digits
(the default language), English and 7 days, a token made from the page that works and then,
revoked from the page, is refused, a refused form shown with the gateway's own message and
code, the callers CSV export, no CSP violation or script error,
no sideways scrolling at a phone's width; screenshots at desktop and phone width, light and
dark.
"""

import argparse
import base64
import csv
import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

PERSIAN_DIGITS = str.maketrans('۰۱۲۳۴۵۶۷۸۹٠١٢٣٤٥٦٧٨٩', '01234567890123456789')


def log(message):
    print('console-check: ' + message, flush=True)


class CheckFailed(Exception):
    pass


def parse_count(text):
    """'۱۲' or '1,234' or '۱٬۲۳۴' as an int; None when it is no number."""
    digits = ''.join(ch for ch in (text or '').translate(PERSIAN_DIGITS) if ch.isdigit())
    return int(digits) if digits else None


# ---- a minimal WebSocket client (RFC 6455, text frames, client side) -----------------------

class WebSocket:
    def __init__(self, url, timeout=10):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f'GET {parts.path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n'
                   f'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n'
                   'Sec-WebSocket-Version: 13\r\n\r\n')
        self.sock.sendall(request.encode())
        self.buffer = b''
        while b'\r\n\r\n' not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise CheckFailed('DevTools closed the connection during the WebSocket handshake')
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b'\r\n\r\n', 1)
        if b' 101 ' not in head.split(b'\r\n', 1)[0]:
            raise CheckFailed('DevTools refused the WebSocket: ' + head.decode(errors='replace'))
        self.sock.setblocking(False)

    def send(self, text):
        payload = text.encode()
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack('>H', n)
        else:
            header += bytes([0x80 | 127]) + struct.pack('>Q', n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        data = header + mask + masked
        while data:
            select.select([], [self.sock], [], 5)
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                continue
            data = data[sent:]

    def _fill(self, n, deadline):
        while len(self.buffer) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            readable, _, _ = select.select([self.sock], [], [], remaining)
            if not readable:
                continue
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise CheckFailed('DevTools closed the WebSocket')
            self.buffer += chunk
        return True

    def _take(self, n):
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def recv(self, timeout):
        """One whole text message, or None when none arrives within timeout seconds. A frame
        once begun is read to its end (a screenshot is megabytes)."""
        deadline = time.monotonic() + timeout
        message = b''
        while True:
            if not self._fill(2, deadline):
                if not message:
                    return None
                deadline = time.monotonic() + 30
                continue
            first, second = self.buffer[0], self.buffer[1]
            length, offset = second & 0x7F, 2
            if length == 126:
                self._fill(4, time.monotonic() + 30)
                length, offset = struct.unpack('>H', self.buffer[2:4])[0], 4
            elif length == 127:
                self._fill(10, time.monotonic() + 30)
                length, offset = struct.unpack('>Q', self.buffer[2:10])[0], 10
            if not self._fill(offset + length, time.monotonic() + 60):
                raise CheckFailed('a DevTools frame did not arrive whole within 60 s')
            self._take(offset)
            payload = self._take(length)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise CheckFailed('DevTools closed the WebSocket')
            if opcode == 0x9:      # ping: answer, keep reading
                continue
            if opcode in (0x1, 0x0):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ---- the DevTools protocol ----------------------------------------------------------------

class DevTools:
    def __init__(self, url):
        self.ws = WebSocket(url)
        self.next_id = 0
        self.events = []
        self.problems = []          # CSP violations and script errors the page reported
        self.dialogs = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session:
            message['sessionId'] = session
        self.ws.send(json.dumps(message))
        return self.next_id

    def _event(self, message):
        method = message.get('method')
        params = message.get('params', {})
        if method == 'Page.javascriptDialogOpening':
            # The page's confirm() (revoking a token): accepted, as the operator would.
            self.dialogs.append(params.get('message', ''))
            self.send('Page.handleJavaScriptDialog', {'accept': True}, message.get('sessionId'))
            return
        if method == 'Runtime.exceptionThrown':
            details = params.get('exceptionDetails', {})
            text = details.get('exception', {}).get('description') or details.get('text')
            self.problems.append('script error: ' + str(text))
        elif method == 'Log.entryAdded':
            entry = params.get('entry', {})
            text = entry.get('text', '')
            if entry.get('level') == 'error' and ('Content Security Policy' in text or entry.get('source') == 'security'):
                self.problems.append('CSP: ' + text)
        elif method == 'Runtime.consoleAPICalled' and params.get('type') == 'error':
            args = params.get('args', [])
            self.problems.append('console.error: ' + ' '.join(str(a.get('value', a.get('description'))) for a in args))
        self.events.append(message)

    def call(self, method, params=None, session=None, timeout=30):
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CheckFailed(f'{method} got no answer within {timeout} s')
            raw = self.ws.recv(remaining)
            if raw is None:
                continue
            message = json.loads(raw)
            if message.get('id') == wanted:
                if 'error' in message:
                    raise CheckFailed(f'{method}: {message["error"]}')
                return message.get('result', {})
            if 'method' in message:
                self._event(message)

    def pump(self, seconds):
        """Reads events for a while (dialogs are answered, downloads reported)."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            raw = self.ws.recv(remaining)
            if raw is not None:
                message = json.loads(raw)
                if 'method' in message:
                    self._event(message)


class Page:
    def __init__(self, tools, session):
        self.tools = tools
        self.session = session

    def call(self, method, params=None, timeout=30):
        return self.tools.call(method, params, self.session, timeout)

    def js(self, expression, timeout=30):
        result = self.call('Runtime.evaluate', {
            'expression': expression, 'returnByValue': True, 'awaitPromise': True,
        }, timeout)
        if 'exceptionDetails' in result:
            raise CheckFailed('evaluating ' + expression[:80] + ': ' +
                              str(result['exceptionDetails'].get('exception', {}).get('description')))
        return result.get('result', {}).get('value')

    def wait(self, expression, description, timeout=20):
        """Polls expression until it is truthy; its last value is in the failure."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            self.tools.pump(0.2)
        raise CheckFailed(f'waited {timeout} s for {description}; last value: {value!r}')

    def text(self, selector):
        return self.js(f'(document.querySelector({json.dumps(selector)}) || {{}}).textContent || null')

    def click(self, selector):
        found = self.js(f'(() => {{ const n = document.querySelector({json.dumps(selector)}); '
                        f'if (!n) return false; n.click(); return true; }})()')
        if not found:
            raise CheckFailed('no element ' + selector)

    def fill(self, selector, value):
        found = self.js(f'(() => {{ const n = document.querySelector({json.dumps(selector)}); if (!n) return false; '
                        f'n.value = {json.dumps(value)}; n.dispatchEvent(new Event("input", {{bubbles: true}})); '
                        f'return true; }})()')
        if not found:
            raise CheckFailed('no element ' + selector)

    def visible(self, selector):
        return self.js(f'(() => {{ const n = document.querySelector({json.dumps(selector)}); '
                       f'return !!n && n.offsetParent !== null; }})()')

    def loaded_generation(self):
        return int(self.js('document.body.dataset.loaded || "0"'))

    def wait_refreshed(self, after, description, timeout=20):
        self.wait(f'Number(document.body.dataset.loaded || 0) > {after}', description, timeout)

    def screenshot(self, path, width, scheme, mobile):
        self.call('Emulation.setDeviceMetricsOverride', {
            'width': width, 'height': 900, 'deviceScaleFactor': 1, 'mobile': mobile})
        self.call('Emulation.setEmulatedMedia', {'features': [{'name': 'prefers-color-scheme', 'value': scheme}]})
        self.tools.pump(0.6)    # the charts are drawn again for the new width (150 ms debounce)
        size = self.call('Page.getLayoutMetrics')['cssContentSize']
        shot = self.call('Page.captureScreenshot', {
            'format': 'png', 'captureBeyondViewport': True,
            'clip': {'x': 0, 'y': 0, 'width': width, 'height': min(size['height'], 8000), 'scale': 1},
        }, timeout=60)
        with open(path, 'wb') as file:
            file.write(base64.b64decode(shot['data']))
        return path


# ---- the gateway, through curl as a client would call it ----------------------------------

def curl_process(base_url, token, text='یک متن کوتاه برای آزمون کنسول.'):
    body = json.dumps({'task': 'summarize', 'text': text})
    out = subprocess.run(
        ['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '20', f'{base_url}/api/process',
         '-H', 'Content-Type: application/json', '-H', f'Authorization: Bearer {token}', '--data', body],
        capture_output=True, text=True, timeout=30)
    return int(out.stdout or 0)


# ---- Chromium -----------------------------------------------------------------------------

def start_chromium(binary, profile):
    arguments = [binary, '--headless=new', '--remote-debugging-port=0', f'--user-data-dir={profile}',
                 '--no-first-run', '--no-default-browser-check', '--disable-gpu', '--disable-extensions',
                 '--disable-background-networking', '--disable-component-update', '--disable-sync',
                 '--password-store=basic', '--use-mock-keychain', 'about:blank']
    if os.geteuid() == 0:
        arguments.insert(1, '--no-sandbox')   # Chromium's sandbox refuses root
    log_file = open(os.path.join(profile, '..', 'chromium.log'), 'wb')
    # Its own process group, so its helper processes go with it when the check stops it.
    process = subprocess.Popen(arguments, stdout=log_file, stderr=log_file, start_new_session=True)
    port_file = os.path.join(profile, 'DevToolsActivePort')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CheckFailed(f'chromium exited ({process.returncode}); see {log_file.name}')
        if os.path.exists(port_file):
            lines = open(port_file).read().split('\n')
            if len(lines) >= 2 and lines[1]:
                return process, f'ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}'
        time.sleep(0.1)
    raise CheckFailed('chromium wrote no DevToolsActivePort within 30 s')


def stop_chromium(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    try:
        os.killpg(process.pid, signal.SIGKILL)   # helpers left in the group this check made
    except (ProcessLookupError, PermissionError):
        pass


def admin_error(base_url, admin_token, path, body, language):
    """The gateway's error body for a POST to its admin API that it refuses (status, JSON)."""
    request = urllib.request.Request(
        base_url + path, data=json.dumps(body).encode(), method='POST',
        headers={'Authorization': f'Bearer {admin_token}', 'Content-Type': 'application/json',
                 'Accept-Language': language})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            raise CheckFailed(f'POST {path} with {body} answered {response.status}, not an error')
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# ---- the check ----------------------------------------------------------------------------

def run(args, tools, work):
    expected_total = args.expected_requests
    callers = dict(item.split('=', 1) for item in args.caller)      # user -> requests
    user = 'console-check-user'      # the caller whose token the page makes
    target = tools.call('Target.createTarget', {'url': 'about:blank'})['targetId']
    session = tools.call('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
    page = Page(tools, session)
    for domain in ('Page', 'Runtime', 'Log'):
        page.call(domain + '.enable')
    page.call('Emulation.setDeviceMetricsOverride', {'width': 1280, 'height': 900, 'deviceScaleFactor': 1, 'mobile': False})
    downloads = os.path.join(work, 'downloads')
    os.makedirs(downloads)
    tools.call('Browser.setDownloadBehavior', {'behavior': 'allow', 'downloadPath': downloads, 'eventsEnabled': True})

    # 1. The page, its login form; a wrong token is refused with a message.
    page.call('Page.navigate', {'url': args.base_url + '/admin'})
    page.wait('document.readyState === "complete" && !!document.querySelector("#login-token")', 'the login form')
    if not page.visible('#login-token') or page.visible('#console'):
        raise CheckFailed('the login form is not what /admin shows first')
    lang = page.js('document.documentElement.lang + "/" + document.documentElement.dir')
    if lang != 'fa/rtl':
        raise CheckFailed(f'the page should open in Persian, right to left (the served default); it is {lang}')
    log(f'/admin shows the login form ({lang})')
    page.fill('#login-token', 'not-the-admin-token-0123456789')
    page.click('#login-submit')
    message = page.wait('document.querySelector("#login-message").textContent', 'the wrong-token message')
    if page.visible('#console'):
        raise CheckFailed('a wrong token opened the console')
    log(f'a wrong token is refused: "{message}"')

    # 2. The right token: the totals reach the count of requests the script sent (Persian digits).
    before = page.loaded_generation()
    page.fill('#login-token', args.admin_token)
    page.click('#login-submit')
    page.wait_refreshed(before, 'the first refresh after login')
    shown = None
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        shown = page.text('#total-requests')
        if parse_count(shown) == expected_total:
            break
        before = page.loaded_generation()
        tools.pump(1)
        page.click('#refresh')
        page.wait_refreshed(before, 'a refresh')
    else:
        raise CheckFailed(f'#total-requests shows {shown!r}, not {expected_total}, after {args.timeout} s')
    if not any('۰' <= ch <= '۹' for ch in shown):
        raise CheckFailed(f'#total-requests is not in Persian digits in Persian: {shown!r}')
    if page.js('sessionStorage.length') != 1:
        raise CheckFailed('sessionStorage should hold the admin token alone')
    log(f'logged in; #total-requests shows {shown} = {expected_total}')

    # 3. English, 7 days: the same totals, left to right.
    page.click('#lang-en')
    before = page.loaded_generation()
    page.click('#range-7d')
    page.wait_refreshed(before, 'the 7-day refresh')
    shown = page.text('#total-requests')
    if parse_count(shown) != expected_total or not shown.strip().isascii():
        raise CheckFailed(f'in English over 7 days #total-requests shows {shown!r}, not {expected_total}')
    lang = page.js('document.documentElement.lang + "/" + document.documentElement.dir')
    if lang != 'en/ltr' or page.js('localStorage.getItem("tg-console-lang")') != 'en':
        raise CheckFailed(f'English should be ltr and remembered; it is {lang}')
    rows = page.js('document.querySelectorAll("#callers-table tbody tr.caller-row").length')
    bars = page.js('document.querySelectorAll("#chart-requests rect.bar").length')
    if rows < len(callers) or bars < 1:
        raise CheckFailed(f'{rows} caller rows and {bars} bars in the requests chart')
    log(f'English, 7 days: #total-requests {shown}, {rows} callers, {bars} bars in the requests chart')

    # 4. The callers CSV, downloaded through the page; before the token check, since a request
    #    refused there may be counted as a guest's.
    page.click('#export-callers')
    path = os.path.join(downloads, 'textgateway-callers.csv')
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not os.path.exists(path):
        tools.pump(0.2)
    if not os.path.exists(path):
        raise CheckFailed(f'no textgateway-callers.csv in {downloads}: {os.listdir(downloads)}')
    table = list(csv.reader(io.StringIO(open(path, encoding='utf-8').read())))
    header = ('user_id,kind,label,plan,requests,input_tokens,output_tokens,errors,tokens_today,daily_token_quota,'
              'quota_used_today,last_seen,cost_micros').split(',')
    if table[0] != header:
        raise CheckFailed(f'the callers CSV header is {table[0]}')
    counted = {}
    cost = 0
    for row in table[1:]:
        record = dict(zip(header, row))
        key = record['user_id'] or '(guests)'
        counted[key] = counted.get(key, 0) + int(record['requests'])
        cost += int(record['cost_micros'])
    for name, requests in callers.items():
        if counted.get(name) != int(requests):
            raise CheckFailed(f'the callers CSV counts {counted.get(name)} requests for {name}, not {requests}: {counted}')
    shutil.copy(path, args.artefacts)
    log(f'callers CSV exported: {len(table) - 1} rows, {counted}, {cost} micro-units spent')

    # 4b. What was spent: the total beside the CSV's sum, per model, and the budgets' state.
    if cost <= 0:
        raise CheckFailed(f'the callers CSV says nothing was spent ({cost}); PRICES is set')
    shown = page.text('#total-cost')
    amount, _, currency = shown.strip().partition('\u00a0')
    if currency != 'USD' or round(float(amount.replace(',', '')) * 1e6) != cost:
        raise CheckFailed(f'#total-cost shows {shown!r}, not {cost / 1e6} USD')
    model_cost = page.js('(document.querySelector(\'#models-table tr.model-row[data-model="console-model"] td.cost\') || {}).textContent')
    if not model_cost or round(float(model_cost.split('\u00a0')[0].replace(',', '')) * 1e6) != cost:
        raise CheckFailed(f'the models table shows {model_cost!r} for console-model, not {cost / 1e6} USD')
    budgets = page.js('JSON.stringify(Array.from(document.querySelectorAll("#budgets-table tr.budget-row")).map((row) => '
                      '[row.dataset.scope, row.dataset.period, row.querySelector("[data-field=used]").textContent, '
                      'row.querySelector("[data-field=share]").textContent]))')
    budgets = json.loads(budgets)
    scopes = sorted(row[0] for row in budgets)
    if scopes != ['gateway', 'guests']:
        raise CheckFailed(f'the budgets table shows the scopes {scopes}, not gateway and guests')
    gateway_used = next(row[2] for row in budgets if row[0] == 'gateway')
    if round(float(gateway_used.split('\u00a0')[0].replace(',', '')) * 1e6) != cost:
        raise CheckFailed(f'the gateway budget shows {gateway_used!r} used, not {cost / 1e6} USD')
    plan_budgets = page.text('#plan-budgets')
    if 'USD' not in plan_budgets:
        raise CheckFailed(f'the plans\' own budgets are not shown: {plan_budgets!r}')
    log(f'cost: {shown} in all and for console-model; budgets {budgets}; plans {plan_budgets!r}')

    # 5. A token made from the page works; revoked from the page, it is refused.
    page.wait('document.querySelectorAll("#token-create-plan option").length > 0', 'the plans in the select')
    page.fill('#token-create-user', user)
    page.fill('#token-create-label', 'made by console-check')
    page.click('#token-create-submit')
    secret = page.wait('!document.querySelector("#token-secret-box").hidden && document.querySelector("#token-secret").value',
                       'the new token shown once')
    stored = page.js('JSON.stringify([Object.values(sessionStorage), Object.values(localStorage)])')
    if secret in stored:
        raise CheckFailed('the new token was kept in the browser\'s storage')
    token_id = page.js('document.querySelector("#token-secret-box").dataset.tokenId')
    row = json.dumps(f'.token-row[data-id="{token_id}"][data-user="{user}"]')
    page.wait(f'!!document.querySelector({row})', f'the new token {token_id} in the list')
    status = 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:      # the gateway follows the store within 2 s
        status = curl_process(args.base_url, secret)
        if status == 200:
            break
        time.sleep(0.3)
    if status != 200:
        raise CheckFailed(f'the token the page made answers {status} on /api/process, not 200')
    log(f'token {token_id} made from the page answers 200 on /api/process')
    page.click(f'.revoke[data-id="{token_id}"]')
    revoked_row = json.dumps(f'.token-row.revoked[data-id="{token_id}"]')
    page.wait(f'!!document.querySelector({revoked_row})', 'the token shown revoked')
    if not tools.dialogs:
        raise CheckFailed('revoking asked for no confirmation')
    page.click('#token-secret-dismiss')
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        status = curl_process(args.base_url, secret)
        if status == 401:
            break
        time.sleep(0.3)
    if status != 401:
        raise CheckFailed(f'the revoked token answers {status}, not 401')
    log(f'token {token_id} revoked from the page (after a confirm) answers 401')

    # A form the gateway refuses: the page shows the gateway's own message and code (the same
    # request through urllib says what they are), and makes no token.
    bad_user = 'not a user id'
    language = page.js('document.documentElement.lang')
    status, refusal = admin_error(args.base_url, args.admin_token, '/api/admin/tokens', {'userId': bad_user}, language)
    if status != 400 or refusal.get('error') is not True or refusal.get('code') != 'invalid_parameter':
        raise CheckFailed(f'a user id with spaces answers {status} {refusal}, not 400 invalid_parameter')
    expected = f'{refusal["message"]} ({refusal["code"]})'
    page.fill('#token-create-user', bad_user)
    page.click('#token-create-submit')
    shown = page.wait(f'(() => {{ const n = document.querySelector("#token-create-message"); '
                      f'return n.textContent.includes({json.dumps(expected)}) && !n.classList.contains("ok") '
                      f'&& n.textContent; }})()', 'the gateway\'s message for the refused form')
    if not page.js('document.querySelector("#token-secret-box").hidden'):
        raise CheckFailed('a refused form showed a token')
    log(f'a refused form shows the gateway\'s message: "{shown}"')

    # The new caller in the callers table after a refresh: its one answer at least (the token
    # may still answer while its revocation reaches the gateway, within 2 s).
    before = page.loaded_generation()
    page.click('#refresh')
    page.wait_refreshed(before, 'the refresh after the token check')
    caller_row = json.dumps(f'#callers-table tr.caller-row[data-user="{user}"] td.num')
    requests = page.wait(f'(document.querySelector({caller_row}) || {{}}).textContent', f'{user} in the callers table')
    if not parse_count(requests):
        raise CheckFailed(f'the callers table shows {requests!r} requests for {user}')
    log(f'{user} is in the callers table with {requests} requests')

    # 6. Screenshots; no sideways scrolling of the page at a phone's width.
    shots = []
    for lang in ('en', 'fa'):
        page.click('#lang-' + lang)
        for width, name, mobile in ((1280, 'desktop', False), (390, 'phone', True)):
            for scheme in ('light', 'dark'):
                shots.append(page.screenshot(os.path.join(args.artefacts, f'console-{name}-{lang}-{scheme}.png'),
                                             width, scheme, mobile))
                if mobile:
                    overflow = page.js('document.documentElement.scrollWidth')
                    if overflow > width + 1:
                        raise CheckFailed(f'at {width} px the page is {overflow} px wide ({lang}): it scrolls sideways')
    # The narrowest phone the page is made for: sections stacked, only tables scroll sideways.
    page.call('Emulation.setDeviceMetricsOverride', {'width': 360, 'height': 800, 'deviceScaleFactor': 1, 'mobile': True})
    tools.pump(0.6)
    overflow = page.js('document.documentElement.scrollWidth')
    if overflow > 361:
        raise CheckFailed(f'at 360 px the page is {overflow} px wide: it scrolls sideways')
    log('screenshots: ' + ', '.join(shots))

    if tools.problems:
        raise CheckFailed('the page reported: ' + '; '.join(tools.problems))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--base-url', required=True)
    parser.add_argument('--admin-token', required=True)
    parser.add_argument('--expected-requests', type=int, required=True)
    parser.add_argument('--caller', action='append', default=[], help='USER=REQUESTS (guests: "(guests)")')
    parser.add_argument('--chromium', default=shutil.which('chromium') or 'chromium')
    parser.add_argument('--artefacts', required=True)
    parser.add_argument('--timeout', type=float, default=30)
    args = parser.parse_args()
    # A TERM (the script's timeout) unwinds through `finally`, so Chromium is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(args.artefacts, exist_ok=True)
    work = tempfile.mkdtemp(prefix='console-check.')
    profile = os.path.join(work, 'profile')
    os.makedirs(profile)
    chromium = None
    status = 1
    try:
        chromium, url = start_chromium(args.chromium, profile)
        tools = DevTools(url)
        run(args, tools, work)
        log('PASS')
        status = 0
    except CheckFailed as failure:
        log('FAIL: ' + str(failure))
    finally:
        if chromium:
            stop_chromium(chromium)
        if status == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f'kept {work} (chromium.log, downloads)')
    return status


if __name__ == '__main__':
    sys.exit(main())
