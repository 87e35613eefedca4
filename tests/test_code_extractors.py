"""Each code extractor on real-looking snippets: symbols, imports, calls, tests."""

from __future__ import annotations

from aether.memory.code.extract import extract
from aether.memory.code.model import language_of

PYTHON = '''\
"""Billing."""
import os
import json as j
from decimal import Decimal
from .models import Invoice
from . import tax, rates

RATE = "def not_a_function(): pass"


class InvoiceService:
    """Builds invoices."""

    def total(self, items):
        return sum(self.line(i) for i in items) + tax.apply(Decimal(0))

    async def send(self, invoice):
        payload = j.dumps(invoice)
        return await post(payload)


def post(payload):
    return os.environ.get("URL"), payload
'''

TYPESCRIPT = """\
import { Router } from "express";
import type { User } from './models/user';
import * as jwt from "jsonwebtoken";
export { helper } from "./helpers";
const fs = require('fs');
// import { fake } from "commented-out";
/* function ghost() {} */
const label = "function inString() {}";

export interface Session { user: User }

export class AuthService {
  private secret: string;
  constructor(secret: string) { this.secret = secret; }
  async login(user: User): Promise<string> {
    return sign(user, this.secret);
  }
  verify(token: string): boolean {
    return jwt.verify(token, this.secret) !== null;
  }
}

export function sign(user: User, secret: string): string {
  return jwt.sign({ id: user.id }, secret);
}

export const refresh = async (token: string) => {
  const ok = new AuthService("x").verify(token);
  return ok ? sign({ id: 1 } as User, "x") : null;
};
"""

GO = """\
package server

import "fmt"
import (
    "net/http"
    log "github.com/sirupsen/logrus"
)

// func Ghost() {}
type Server struct {
    addr string
}

type Handler interface {
    Serve() error
}

func New(addr string) *Server {
    return &Server{addr: addr}
}

func (s *Server) Start() error {
    log.Info("starting")
    fmt.Println(s.addr)
    return http.ListenAndServe(s.addr, nil)
}

func (s *Server) Restart() error {
    return s.Start()
}
"""

RUST = """\
use std::collections::HashMap;
use serde::{Deserialize, Serialize};
use crate::store::Store as Backend;
mod config;
extern crate log;

// fn ghost() {}
pub struct Cache {
    map: HashMap<String, String>,
}

pub enum Mode { Fast, Safe }

pub trait Evict { fn evict(&mut self); }

impl Cache {
    pub fn new() -> Self {
        Cache { map: HashMap::new() }
    }

    pub async fn get(&self, key: &str) -> Option<&String> {
        self.lookup(key)
    }

    fn lookup(&self, key: &str) -> Option<&String> {
        self.map.get(key)
    }
}

impl Evict for Cache {
    fn evict(&mut self) { self.map.clear(); }
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_builds() { let _ = super::Cache::new(); }
}
"""


def test_languages_by_extension() -> None:
    assert language_of("a/b.py") == "python" and language_of("x.tsx") == "typescript"
    assert language_of("x.mjs") == "javascript" and language_of("main.go") == "go"
    assert language_of("lib.rs") == "rust" and language_of("README.md") is None
    assert extract("README.md", "# hi") is None


def test_python() -> None:
    facts = extract("billing/service.py", PYTHON)
    assert facts is not None and facts.error is None
    assert facts.classes == ["InvoiceService"]
    assert facts.functions == ["total", "send", "post"]
    methods = {s.name: s.parent for s in facts.symbols if s.kind == "function"}
    assert methods == {"total": "InvoiceService", "send": "InvoiceService", "post": None}
    assert facts.imports == ["os", "json", "decimal", ".models", ".tax", ".rates"]
    assert ("total", "line") in facts.calls and ("total", "apply") in facts.calls
    assert ("send", "post") in facts.calls and ("post", "get") in facts.calls
    assert "not_a_function" not in facts.functions
    assert not facts.is_test and extract("tests/test_service.py", PYTHON).is_test  # type: ignore[union-attr]


def test_python_that_does_not_parse_still_yields_a_file() -> None:
    facts = extract("broken.py", "def oops(:\n")
    assert facts is not None and facts.error and facts.symbols == []


def test_typescript() -> None:
    facts = extract("src/auth/service.ts", TYPESCRIPT)
    assert facts is not None
    assert facts.imports == ["express", "./models/user", "jsonwebtoken", "./helpers", "fs"]
    assert facts.classes == ["Session", "AuthService"]
    methods = {s.name: s.parent for s in facts.symbols if s.kind == "function"}
    assert methods == {
        "constructor": "AuthService",
        "login": "AuthService",
        "verify": "AuthService",
        "sign": None,
        "refresh": None,
    }
    assert "ghost" not in facts.functions and "inString" not in facts.functions
    assert ("login", "sign") in facts.calls and ("refresh", "verify") in facts.calls
    assert ("refresh", "sign") in facts.calls
    assert extract("src/auth/service.test.ts", TYPESCRIPT).is_test  # type: ignore[union-attr]


def test_go() -> None:
    facts = extract("server/server.go", GO)
    assert facts is not None
    assert facts.imports == ["fmt", "net/http", "github.com/sirupsen/logrus"]
    assert facts.classes == ["Server", "Handler"]
    methods = {s.name: s.parent for s in facts.symbols if s.kind == "function"}
    assert methods == {"New": None, "Start": "Server", "Restart": "Server"}
    assert ("Restart", "Start") in facts.calls and ("Start", "ListenAndServe") in facts.calls
    assert "Ghost" not in facts.functions
    assert extract("server/server_test.go", GO).is_test  # type: ignore[union-attr]


def test_rust() -> None:
    facts = extract("src/cache.rs", RUST)
    assert facts is not None
    assert facts.imports == [
        "std::collections::HashMap",
        "serde",
        "crate::store::Store",
        "config",
        "log",
    ]
    assert facts.classes == ["Cache", "Mode", "Evict"]
    methods = {(s.name, s.parent) for s in facts.symbols if s.kind == "function"}
    assert {("new", "Cache"), ("get", "Cache"), ("lookup", "Cache"), ("it_builds", None)} <= methods
    assert ("evict", "Cache") in methods
    assert ("get", "lookup") in facts.calls
    assert "ghost" not in facts.functions
    assert facts.is_test  # it carries #[cfg(test)]
