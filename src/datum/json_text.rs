//! JSON text read as a stream of tokens, for text chumbo wrote itself (a page of rows,
//! src/result_json/text_page.rs) that joins a jsonb response: jsonb_in's lexer reads a string
//! character by character (PostgreSQL 15), most of a 50-row call's cost when its rows went through
//! it. Strings are decoded by serde_json, numbers kept as written (numeric_in reads them, as
//! jsonb_in does). Anything this reader does not take makes it give up (None): the caller then
//! hands the text to jsonb_in, which accepts or refuses it with its own error.

use std::borrow::Cow;

/// One token of a JSON text, in document order.
pub enum Token<'a> {
    BeginObject,
    EndObject,
    BeginArray,
    EndArray,
    Key(Cow<'a, str>),
    String(Cow<'a, str>),
    /// A number's text, as written (valid by JSON's grammar).
    Number(&'a str),
    Bool(bool),
    Null,
}

/// The tokens of `json`, or None: invalid JSON, containers nested deeper than `max_depth`, or a
/// string holding U+0000 (jsonb cannot).
pub fn tokens(json: &str, max_depth: usize) -> Option<Vec<Token<'_>>> {
    let mut r = Reader {
        s: json,
        at: 0,
        max_depth,
        out: Vec::new(),
    };
    r.value(0)?;
    r.space();
    (r.at == json.len()).then_some(r.out)
}

struct Reader<'a> {
    s: &'a str,
    at: usize,
    max_depth: usize,
    out: Vec<Token<'a>>,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.at).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        self.space();
        match self.peek()? {
            b'{' => self.container(depth, b'}'),
            b'[' => self.container(depth, b']'),
            b'"' => {
                let s = self.string()?;
                self.out.push(Token::String(s));
                Some(())
            }
            b't' => self.literal("true", Token::Bool(true)),
            b'f' => self.literal("false", Token::Bool(false)),
            b'n' => self.literal("null", Token::Null),
            _ => self.number(),
        }
    }

    /// An object (`close` '}') or an array (']'), at its opening bracket.
    fn container(&mut self, depth: usize, close: u8) -> Option<()> {
        if depth >= self.max_depth {
            return None;
        }
        let object = close == b'}';
        self.at += 1;
        self.out.push(if object {
            Token::BeginObject
        } else {
            Token::BeginArray
        });
        self.space();
        if self.peek() == Some(close) {
            self.at += 1;
        } else {
            loop {
                if object {
                    self.space();
                    let key = self.string()?;
                    self.out.push(Token::Key(key));
                    self.space();
                    if self.bump()? != b':' {
                        return None;
                    }
                }
                self.value(depth + 1)?;
                self.space();
                match self.bump()? {
                    b',' => continue,
                    c if c == close => break,
                    _ => return None,
                }
            }
        }
        self.out.push(if object {
            Token::EndObject
        } else {
            Token::EndArray
        });
        Some(())
    }

    /// A string, at its opening quote: borrowed when it has no escapes, else decoded by serde.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        if self.bump()? != b'"' {
            return None;
        }
        let mut escaped = false;
        loop {
            match self.bump()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.bump()?;
                }
                0..=0x1f => return None,
                _ => {}
            }
        }
        // Both ends are ASCII quotes: char boundaries.
        let quoted = &self.s[start..self.at];
        if !escaped {
            return Some(Cow::Borrowed(&quoted[1..quoted.len() - 1]));
        }
        let s: String = serde_json::from_str(quoted).ok()?;
        (!s.contains('\0')).then_some(Cow::Owned(s))
    }

    fn literal(&mut self, word: &str, token: Token<'a>) -> Option<()> {
        self.s[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            self.out.push(token);
        })
    }

    /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        let digits = |r: &mut Self| {
            let from = r.at;
            while matches!(r.peek(), Some(b'0'..=b'9')) {
                r.at += 1;
            }
            r.at > from
        };
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        self.out.push(Token::Number(&self.s[start..self.at]));
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(json: &str) -> Option<String> {
        let t = tokens(json, 128)?;
        Some(
            t.iter()
                .map(|t| match t {
                    Token::BeginObject => "{".to_string(),
                    Token::EndObject => "}".to_string(),
                    Token::BeginArray => "[".to_string(),
                    Token::EndArray => "]".to_string(),
                    Token::Key(k) => format!("k:{k}"),
                    Token::String(s) => format!("s:{s}"),
                    Token::Number(n) => format!("n:{n}"),
                    Token::Bool(b) => format!("b:{b}"),
                    Token::Null => "null".to_string(),
                })
                .collect::<Vec<_>>()
                .join(" "),
        )
    }

    #[test]
    fn reads_what_chumbo_writes() {
        assert_eq!(
            shape(r#"[{"a":1.50,"b":"x\ny \"q\" é","c":[true,false,null],"d":{}},[],-0,1e-7]"#)
                .unwrap(),
            "[ { k:a n:1.50 k:b s:x\ny \"q\" é k:c [ b:true b:false null ] k:d { } } [ ] n:-0 n:1e-7 ]"
        );
        assert_eq!(
            shape(" { \"a\" : [ 1 , 2 ] } ").unwrap(),
            "{ k:a [ n:1 n:2 ] }"
        );
        assert_eq!(shape(r#""\u00e9\ud83d\ude00""#).unwrap(), "s:é😀");
    }

    #[test]
    fn gives_up_on_what_jsonb_in_must_judge() {
        for bad in [
            "",
            "[",
            "[1,]",
            "{\"a\"}",
            "{\"a\":1,}",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "tru",
            "nul",
            "\"a",
            "\"\\u0000\"",
            "\"\\x\"",
            "\"tab\there\"",
            "[1] 2",
            "{1:2}",
            "NaN",
        ] {
            assert!(tokens(bad, 128).is_none(), "{bad:?}");
        }
        let deep = format!("{}{}", "[".repeat(5), "]".repeat(5));
        assert!(tokens(&deep, 5).is_some());
        assert!(tokens(&deep, 4).is_none());
    }
}
