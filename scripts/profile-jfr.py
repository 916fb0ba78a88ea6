#!/usr/bin/env python3
"""Summarises `jfr print --events jdk.ExecutionSample --stack-depth 200` (standard input): the share of samples
in which each layer of the service appears (inclusive), the methods on top of the stack (self), and the
service's own first frame (where in PayOnce the time is spent, whatever runs below it)."""
import collections
import re
import sys

LAYERS = [
    ('HTTP server (Netty codec, Vert.x HTTP)', r'io\.netty\.handler\.codec\.http|io\.vertx\.core\.http\.impl\.(Http1xServer|ServerWebSocket|HttpServer)'),
    ('Vert.x Web router and handlers', r'io\.vertx\.ext\.web\.'),
    ('REST layer (Quarkus REST)', r'org\.jboss\.resteasy\.reactive\.server|io\.quarkus\.resteasy\.reactive\.server'),
    ('REST client (channel calls)', r'org\.jboss\.resteasy\.reactive\.client|io\.quarkus\.rest\.client'),
    ('MySQL client', r'io\.vertx\.mysqlclient|io\.vertx\.sqlclient'),
    ('Redis client', r'io\.vertx\.redis|io\.quarkus\.redis'),
    ('Jackson', r'com\.fasterxml\.jackson'),
    ('Bean Validation', r'org\.hibernate\.validator|jakarta\.validation'),
    ('Micrometer and Prometheus', r'io\.micrometer|io\.prometheus'),
    ('logging', r'org\.jboss\.logmanager|org\.jboss\.logging'),
    ('crypto (HMAC, SHA-256)', r'javax\.crypto|sun\.security|java\.security\.MessageDigest'),
    ('Mutiny', r'io\.smallrye\.mutiny'),
    ('CDI (ArC)', r'io\.quarkus\.arc'),
    ('PayOnce', r'io\.payonce\.'),
    ('Netty I/O (sockets, buffers, event loop)', r'io\.netty\.channel|io\.netty\.buffer|sun\.nio'),
]


def samples(lines):
    stack, inside = [], False
    for line in lines:
        text = line.strip()
        if text.startswith('jdk.ExecutionSample'):
            if stack:
                yield stack
            stack, inside = [], False
        elif text.startswith('stackTrace = ['):
            inside = True
        elif inside and text.startswith(']'):
            inside = False
        elif inside and text and text != '...':
            stack.append(text.split('(')[0].split(' line:')[0])
    if stack:
        yield stack


total = 0
layers, tops, own = collections.Counter(), collections.Counter(), collections.Counter()
for stack in samples(sys.stdin):
    total += 1
    joined = '\n'.join(stack)
    for name, pattern in LAYERS:
        if re.search(pattern, joined):
            layers[name] += 1
    tops[stack[0]] += 1
    first = next((frame for frame in stack if frame.startswith('io.payonce.')), None)
    own[first or '(no PayOnce frame)'] += 1
if not total:
    print('no samples')
    sys.exit(0)
print(f'{total} samples')
print('layers, inclusive:')
for name, n in layers.most_common():
    print(f'  {100 * n / total:5.1f} %  {name}')
print('methods on top of the stack (self):')
for name, n in tops.most_common(20):
    print(f'  {100 * n / total:5.1f} %  {name}')
print("PayOnce's first frame (inclusive of what runs below it):")
for name, n in own.most_common(20):
    print(f'  {100 * n / total:5.1f} %  {name}')
