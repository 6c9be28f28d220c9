//! Parsers for setting values. Each returns a message that reads well after "expected".

use std::time::Duration;

/// Parse a duration: `90s`, `45m`, `24h`, `1h30m`, `500ms`, or bare seconds (`30`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let expected = || format!("a duration like 90s, 45m or 24h, not `{s}`");
    if s.is_empty() {
        return Err(expected());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(expected)?;
        if digits == 0 {
            return Err(expected());
        }
        let n: f64 = rest[..digits].parse().map_err(|_| expected())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match rest[..unit_len].trim() {
            "ms" => 0.001,
            "s" | "sec" | "secs" => 1.0,
            "m" | "min" | "mins" => 60.0,
            "h" | "hr" | "hrs" => 3600.0,
            "d" => 86400.0,
            _ => return Err(expected()),
        };
        total = Duration::try_from_secs_f64(n * scale)
            .ok()
            .and_then(|d| total.checked_add(d))
            .ok_or_else(|| format!("a duration that fits in 64 bits of seconds, not `{s}`"))?;
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// Parse a time limit in seconds (`10`, `0.5`) or as a duration (`500ms`, `2m`): above 0 and
/// below a day.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let d = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Duration::from_secs_f64(secs),
        Ok(_) => Duration::ZERO,
        Err(_) => parse_duration(t).unwrap_or(Duration::ZERO),
    };
    if d > Duration::ZERO && d < Duration::from_secs(86_400) {
        Ok(d)
    } else {
        Err(format!(
            "a number of seconds above 0 and below a day, like 10 or 0.5, not `{t}`"
        ))
    }
}

/// Parse a duration that must be above zero (a time cap or timeout of 0 would stop every
/// phase at once).
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!(
            "a duration above 0 like 90s, 45m or 24h, not `{}`",
            s.trim()
        )),
        d => Ok(d),
    }
}

/// Parse yes/no in the spellings the seeds use (`Yes`, `No`, `Enabled`, `Disabled`, ...).
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "y" | "true" | "on" | "enabled" | "enable" | "1" => Ok(true),
        "no" | "n" | "false" | "off" | "disabled" | "disable" | "0" => Ok(false),
        _ => Err(format!("yes/no (or enabled/disabled), not `{}`", s.trim())),
    }
}

/// Parse a positive whole number.
pub fn parse_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("a whole number above 0, not `{}`", s.trim())),
    }
}

/// Parse a share: `25%` or `0.25`, at least 0 and below 1.
pub fn parse_ratio(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!("a percentage like 25% (0-99%), not `{t}`")),
    }
}

/// Parse a token count: `auto` (None), `16k`, `16000`, `128k tokens`, `1M`.
pub fn parse_tokens(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    if lower == "auto" || lower.is_empty() {
        return Ok(None);
    }
    let lower = lower.trim_end_matches("tokens").trim();
    let (num, scale) = if let Some(n) = lower.strip_suffix('k') {
        (n, 1000.0)
    } else if let Some(n) = lower.strip_suffix('m') {
        (n, 1_000_000.0)
    } else {
        (lower, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 => Ok(Some((v * scale).round() as u64)),
        _ => Err(format!("a token count like 16k, 16000 or auto, not `{t}`")),
    }
}

/// One host an agent may reach, with its port (443 when none was given).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostPort {
    /// Lower case; an IPv6 address without its brackets.
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl HostPort {
    /// `host`, `host:port`, `[v6]:port`; port 443 when none is given (agents reach their
    /// models over HTTPS).
    pub fn parse(entry: &str) -> Result<HostPort, String> {
        let e = entry.trim();
        let (host, port) = if let Some(rest) = e.strip_prefix('[') {
            let (h, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("`{e}`: an IPv6 address needs its closing `]`"))?;
            (h, after.strip_prefix(':'))
        } else {
            match e.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (e, None),
            }
        };
        let port = match port {
            None => 443,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("`{e}`: the port must be a number from 1 to 65535"))?,
        };
        let valid = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_:".contains(c));
        if !valid {
            return Err(format!(
                "`{e}` is not a host name, host:port or [IPv6]:port"
            ));
        }
        Ok(HostPort {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// The host and port of a URL (`https://api.example.com/v1`, `http://127.0.0.1:8080`,
    /// `localhost:11434`): the port its scheme implies when none is given (http 80, https
    /// 443, no scheme `default_port`). `None` for what is not such a URL.
    pub fn from_url(url: &str, default_port: u16) -> Option<HostPort> {
        let url = url.trim();
        let (port, rest) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (80, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (443, rest),
            Some(_) => return None,
            None => (default_port, url),
        };
        let authority = rest.split(['/', '?', '#']).next()?;
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let has_port = authority.rsplit_once(':').is_some_and(|(_, p)| {
            p.chars().all(|c| c.is_ascii_digit()) && !authority.ends_with(']')
        });
        let parsed = HostPort::parse(authority).ok()?;
        Some(match has_port {
            true => parsed,
            false => HostPort { port, ..parsed },
        })
    }

    /// The address of this machine itself (`localhost`, `127.0.0.1`, `::1`).
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// Parse `host[:port], …` (empty or `none`: no host).
pub fn parse_hosts(s: &str) -> Result<Vec<HostPort>, String> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    t.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(HostPort::parse)
        .collect()
}

/// Parse a whole number, 0 allowed.
pub fn parse_whole(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("a whole number (0 or more), not `{}`", s.trim()))
}

/// Parse a budget: tokens, dollars or both, separated by a comma: `2M tokens`, `$5`,
/// `2M tokens, $5`, `500k`, `$0.50`; empty or `none` sets no limit.
pub fn parse_budget(s: &str) -> Result<crate::plan::decide::Budget, String> {
    let t = s.trim();
    let expected = || format!("a budget like `2M tokens`, `$5` or `2M tokens, $5`, not `{t}`");
    let mut b = crate::plan::decide::Budget::default();
    if t.is_empty() || t.eq_ignore_ascii_case("none") {
        return Ok(b);
    }
    for part in t.split(',').map(str::trim) {
        let lower = part.to_ascii_lowercase();
        let dollars = lower
            .strip_prefix('$')
            .or_else(|| lower.strip_suffix("usd"))
            .or_else(|| lower.strip_suffix("dollars"));
        if let Some(d) = dollars {
            let v: f64 = d.trim().parse().map_err(|_| expected())?;
            if !(v.is_finite() && v > 0.0) || b.usd.is_some() {
                return Err(expected());
            }
            b.usd = Some(v);
        } else {
            let n = parse_tokens(part)
                .ok()
                .flatten()
                .filter(|_| b.tokens.is_none() && !lower.starts_with("auto"))
                .ok_or_else(expected)?;
            b.tokens = Some(n);
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        let b = |s| parse_budget(s).unwrap();
        assert_eq!(b("2M tokens").tokens, Some(2_000_000));
        assert_eq!(b("2M tokens").usd, None);
        assert_eq!(b("$5").usd, Some(5.0));
        assert_eq!(b("2M tokens, $5").tokens, Some(2_000_000));
        assert_eq!(b("$0.50, 500k").usd, Some(0.5));
        assert_eq!(b("$0.50, 500k").tokens, Some(500_000));
        assert_eq!(b("5 USD").usd, Some(5.0));
        assert!(!b("").is_set() && !b("none").is_set());
        for bad in [
            "lots",
            "$",
            "$-1",
            "$x",
            "1M, 2M",
            "$1, $2",
            "auto",
            "-5 tokens",
            "$inf",
        ] {
            let e = parse_budget(bad).unwrap_err();
            assert!(e.contains("a budget like"), "{bad}: {e}");
        }
        assert_eq!(parse_whole("0"), Ok(0));
        assert_eq!(parse_whole(" 3 "), Ok(3));
        assert!(parse_whole("-1").is_err() && parse_whole("x").is_err());
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_seconds(" 0.5 ").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_seconds("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_seconds("2m").unwrap(), Duration::from_secs(120));
        for bad in ["", "0", "-1", "NaN", "inf", "86400", "1d", "soon"] {
            let e = parse_seconds(bad).unwrap_err();
            assert!(e.contains("a number of seconds"), "{bad}: {e}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("45m").unwrap(), Duration::from_secs(2700));
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86400));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert!(
            parse_duration("99999999999999999999d")
                .unwrap_err()
                .contains("fits")
        );
        assert!(parse_duration("9999999999999999h").is_err());
        assert!(parse_duration("18446744073709551615").is_ok());
        for bad in ["", "lots", "5 parsecs", "m", "-3s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tokens_ratios_bools() {
        assert_eq!(parse_tokens("16k").unwrap(), Some(16000));
        assert_eq!(parse_tokens("128k tokens").unwrap(), Some(128000));
        assert_eq!(parse_tokens("1M").unwrap(), Some(1_000_000));
        assert_eq!(parse_tokens("12000").unwrap(), Some(12000));
        assert_eq!(parse_tokens("auto").unwrap(), None);
        assert!(parse_tokens("lots").is_err());
        assert_eq!(parse_ratio("25%").unwrap(), 0.25);
        assert_eq!(parse_ratio("0.1").unwrap(), 0.1);
        assert!(parse_ratio("lots").is_err());
        assert!(parse_ratio("150%").is_err());
        assert!(parse_bool("Enabled").unwrap());
        assert!(!parse_bool("No").unwrap());
        assert!(parse_bool("maybe").is_err());
    }
}

/// A command line fit to print: values of flags and variables whose names speak of keys,
/// tokens, secrets or passwords, and words that look like API keys, are masked.
/// `aider --openai-api-key sk-abc` -> `aider --openai-api-key ***`.
pub fn redact(command: &str) -> String {
    fn secret_name(name: &str) -> bool {
        let n = name.to_ascii_lowercase();
        ["key", "token", "secret", "password", "passwd"]
            .iter()
            .any(|w| n.contains(w))
    }
    fn looks_like_key(word: &str) -> bool {
        let w = word.trim_matches(|c| c == '"' || c == '\'');
        ["sk-", "sk_", "ghp_", "github_pat_", "xoxb-", "AIza"]
            .iter()
            .any(|p| w.starts_with(p) && w.len() > p.len() + 3)
    }
    let mut out = Vec::new();
    let mut mask_next = false;
    for word in command.split(' ') {
        let masked = if mask_next && !word.is_empty() {
            mask_next = false;
            "***".to_string()
        } else if let Some((name, _)) = word.split_once('=')
            && secret_name(name)
        {
            format!("{name}=***")
        } else if word.starts_with('-') && secret_name(word) {
            mask_next = true;
            word.to_string()
        } else if looks_like_key(word) {
            "***".to_string()
        } else {
            word.to_string()
        };
        out.push(masked);
    }
    out.join(" ")
}

#[cfg(test)]
mod redact_tests {
    use super::*;

    #[test]
    fn masks_secrets_only() {
        assert_eq!(
            redact("aider --openai-api-key sk-SECRET123 --yes"),
            "aider --openai-api-key *** --yes"
        );
        assert_eq!(
            redact("OPENAI_API_KEY=abc claude -p"),
            "OPENAI_API_KEY=*** claude -p"
        );
        assert_eq!(
            redact("tool --api-token=xyz run"),
            "tool --api-token=*** run"
        );
        assert_eq!(redact("x sk-ant-api03-abcdef"), "x ***");
        assert_eq!(
            redact("claude -p --permission-mode acceptEdits"),
            "claude -p --permission-mode acceptEdits"
        );
        assert_eq!(
            redact("sh examples/agents/keyboard.sh"),
            "sh examples/agents/keyboard.sh"
        );
    }

    #[test]
    fn hosts_and_urls() {
        let h = |host: &str, port| HostPort {
            host: host.into(),
            port,
        };
        assert_eq!(
            parse_hosts("Registry.npmjs.example, 127.0.0.1:8080 ,[::1]:9").unwrap(),
            vec![
                h("registry.npmjs.example", 443),
                h("127.0.0.1", 8080),
                h("::1", 9)
            ]
        );
        assert_eq!(parse_hosts("none").unwrap(), vec![]);
        assert!(parse_hosts("a.example:http").unwrap_err().contains("port"));
        assert!(parse_hosts("https://a.example").is_err());
        assert_eq!(
            HostPort::from_url("https://api.example.com/v1", 1),
            Some(h("api.example.com", 443))
        );
        assert_eq!(
            HostPort::from_url("http://127.0.0.1:8080/v1", 1),
            Some(h("127.0.0.1", 8080))
        );
        assert_eq!(
            HostPort::from_url("localhost", 11434),
            Some(h("localhost", 11434))
        );
        assert_eq!(HostPort::from_url("ftp://x", 1), None);
        assert!(h("localhost", 1).is_loopback() && h("::1", 1).is_loopback());
        assert!(!h("10.0.0.1", 1).is_loopback());
        assert_eq!(h("::1", 9).to_string(), "[::1]:9");
    }
}
