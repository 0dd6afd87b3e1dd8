//! Where buckets and objects are in the vouch namespace, and S3 listings over it (pure).
//!
//! A bucket is an empty file `s3b/<bucket>`; an object is the file `s3o/<bucket>/<key>`
//! ([`super::object`]). Bucket names have no `/` (S3's rules, which s3s checks), so the
//! objects of one bucket are exactly the names under its prefix, and the namespace's proven
//! complete listing is a proven complete listing of each bucket.

use vouch_client::ClientError;

const BUCKET_PREFIX: &str = "s3b/";
const OBJECT_PREFIX: &str = "s3o/";

pub fn bucket_name(bucket: &str) -> String {
    format!("{BUCKET_PREFIX}{bucket}")
}

/// The bucket a namespace name is the marker of.
pub fn bucket_of(name: &str) -> Option<&str> {
    name.strip_prefix(BUCKET_PREFIX)
}

/// The namespace's prefix of `bucket`'s objects.
pub fn objects_prefix(bucket: &str) -> String {
    format!("{OBJECT_PREFIX}{bucket}/")
}

/// The name of `key` in `bucket`; an error when vouch cannot name it (too long, or a control
/// character, which vouch names exclude).
pub fn object_name(bucket: &str, key: &str) -> Result<String, ClientError> {
    let name = format!("{}{key}", objects_prefix(bucket));
    vouch_client::verify::valid_name(&name)?;
    Ok(name)
}

/// One page of a ListObjectsV2 answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub keys: Vec<String>,
    pub common_prefixes: Vec<String>,
    /// Where the next page starts after (the last key or common prefix of this one), when
    /// there is one.
    pub next: Option<String>,
}

/// The page of `keys` (ascending, as S3 orders them: by their UTF-8 bytes) under `prefix`
/// that comes after `after`, with keys that hold `delimiter` past the prefix rolled up into
/// common prefixes, at most `max` entries (keys and prefixes together).
pub fn list_page(keys: &[String], prefix: &str, delimiter: Option<&str>, after: Option<&str>, max: usize) -> Page {
    let mut page = Page::default();
    let first = match after {
        Some(after) => keys.partition_point(|k| k.as_str() <= after),
        None => keys.partition_point(|k| k.as_str() < prefix),
    };
    let mut last: Option<String> = None;
    for key in &keys[first..] {
        let Some(rest) = key.strip_prefix(prefix) else {
            if key.as_str() > prefix {
                break;
            }
            continue;
        };
        let entry = match delimiter.filter(|d| !d.is_empty()).and_then(|d| rest.find(d).map(|at| at + d.len())) {
            Some(end) => {
                let common = format!("{prefix}{}", &rest[..end]);
                // A common prefix is listed once, and a page that ended on it skips it.
                if page.common_prefixes.last() == Some(&common) || after.is_some_and(|a| a.starts_with(&common)) {
                    continue;
                }
                common
            }
            None => key.clone(),
        };
        if page.keys.len() + page.common_prefixes.len() == max {
            page.next = last;
            return page;
        }
        last = Some(entry.clone());
        match entry == *key {
            true => page.keys.push(entry),
            false => page.common_prefixes.push(entry),
        }
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_listing_pages_through_keys_and_rolls_up_common_prefixes() {
        let all = keys(&["a", "b/1", "b/2", "b/c/3", "c", "d/1", "e"]);
        let page = list_page(&all, "", Some("/"), None, 1000);
        assert_eq!(page.keys, ["a", "c", "e"]);
        assert_eq!(page.common_prefixes, ["b/", "d/"]);
        assert_eq!(page.next, None);
        // Two at a time: a, b/ | c, d/ | e.
        let p1 = list_page(&all, "", Some("/"), None, 2);
        assert_eq!(
            (p1.keys.clone(), p1.common_prefixes.clone(), p1.next.clone()),
            (keys(&["a"]), keys(&["b/"]), Some("b/".into()))
        );
        let p2 = list_page(&all, "", Some("/"), p1.next.as_deref(), 2);
        assert_eq!((p2.keys.clone(), p2.common_prefixes.clone()), (keys(&["c"]), keys(&["d/"])));
        let p3 = list_page(&all, "", Some("/"), p2.next.as_deref(), 2);
        assert_eq!((p3.keys, p3.next), (keys(&["e"]), None));
        // Under a prefix, without a delimiter: every key below it.
        assert_eq!(list_page(&all, "b/", None, None, 1000).keys, ["b/1", "b/2", "b/c/3"]);
        assert_eq!(list_page(&all, "b/", Some("/"), None, 1000).common_prefixes, ["b/c/"]);
        // Start after a key; a prefix nothing has.
        assert_eq!(list_page(&all, "", None, Some("b/2"), 1000).keys, ["b/c/3", "c", "d/1", "e"]);
        assert_eq!(list_page(&all, "x", None, None, 1000), Page::default());
        // Exactly a page: no next.
        assert_eq!(list_page(&all, "b/", None, None, 3).next, None);
        assert_eq!(list_page(&all, "b/", None, None, 2).next, Some("b/2".into()));
    }

    #[test]
    fn names_keep_buckets_apart() {
        assert_eq!(object_name("photos", "2024/a.jpg").unwrap(), "s3o/photos/2024/a.jpg");
        assert!(object_name("photos", "bad\u{7}key").is_err());
        assert!(object_name("photos", &"k".repeat(1100)).is_err());
        assert_eq!(bucket_of(&bucket_name("photos")), Some("photos"));
        assert_eq!(bucket_of("s3o/photos/x"), None);
    }
}
