//! S3's calls that object_store does not make, sent through object_store's own HTTP client and
//! signed by its SigV4 signer: ListMultipartUploads (what [`StoreUrl::recover`] aborts) and
//! UploadPartCopy (a part copied server-side from a range of another object, for the
//! many-writer upload).

use std::sync::Arc;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey, AwsAuthorizer};
use object_store::client::{
    HttpClient, HttpConnector, HttpRequest, HttpRequestBody, ReqwestConnector,
};
use object_store::multipart::MultipartStore;
use object_store::path::Path as StorePath;
use object_store::ClientOptions;

use crate::error::{Error, Result};

/// Where an S3 bucket answers and how requests to it are signed.
#[derive(Debug, Clone)]
pub(crate) struct S3Bucket {
    /// The bucket's URL, without a trailing slash (path style `endpoint/bucket`, or the
    /// virtual-hosted `https://bucket.s3.region.amazonaws.com`).
    base: String,
    region: String,
    sign: bool,
    allow_http: bool,
}

impl S3Bucket {
    /// The bucket a configured builder addresses.
    pub(crate) fn of(b: &AmazonS3Builder) -> Option<S3Bucket> {
        let get = |k: AmazonS3ConfigKey| b.get_config_value(&k);
        let bucket = get(AmazonS3ConfigKey::Bucket)?;
        let region = get(AmazonS3ConfigKey::Region).unwrap_or_else(|| "us-east-1".into());
        let virtual_hosted =
            get(AmazonS3ConfigKey::VirtualHostedStyleRequest).is_some_and(|v| v == "true");
        let base = match get(AmazonS3ConfigKey::Endpoint) {
            Some(e) if virtual_hosted => e.trim_end_matches('/').to_string(),
            Some(e) => format!("{}/{bucket}", e.trim_end_matches('/')),
            None => format!("https://{bucket}.s3.{region}.amazonaws.com"),
        };
        Some(S3Bucket {
            allow_http: base.starts_with("http://"),
            base,
            region,
            sign: get(AmazonS3ConfigKey::SkipSignature).is_none_or(|v| v != "true"),
        })
    }

    fn client(&self) -> Result<HttpClient> {
        ReqwestConnector::default()
            .connect(&ClientOptions::new().with_allow_http(self.allow_http))
            .map_err(|e| Error::msg(format!("S3 client: {}", super::store_text(&e))))
    }

    /// Sends a signed request and returns the response body, or an error naming the call.
    async fn send(&self, s3: &AmazonS3, mut req: HttpRequest, what: &str) -> Result<Vec<u8>> {
        if self.sign {
            let cred = s3
                .credentials()
                .get_credential()
                .await
                .map_err(|e| Error::msg(format!("{what}: {}", super::store_text(&e))))?;
            AwsAuthorizer::new(&cred, "s3", &self.region).authorize(&mut req, None);
        }
        let resp = self
            .client()?
            .execute(req)
            .await
            .map_err(|e| Error::msg(format!("{what}: {}", super::store_text(&e))))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .bytes()
            .await
            .map_err(|e| Error::msg(format!("{what}: {}", super::store_text(&e))))?;
        if !status.is_success() {
            return Err(Error::msg(format!(
                "{what}: {status}: {}",
                String::from_utf8_lossy(&body)
                    .chars()
                    .take(300)
                    .collect::<String>()
            )));
        }
        Ok(body.to_vec())
    }

    /// The upload ids of the multipart uploads in progress for exactly `key`.
    pub(crate) async fn pending_uploads(
        &self,
        s3: &AmazonS3,
        key: &StorePath,
    ) -> Result<Vec<String>> {
        let url = format!("{}/?uploads&prefix={}", self.base, encode(key.as_ref()));
        let req = http::Request::builder()
            .method("GET")
            .uri(&url)
            .body(HttpRequestBody::empty())
            .map_err(|e| Error::msg(format!("ListMultipartUploads: {}", super::store_text(&e))))?;
        let body = self.send(s3, req, "S3 ListMultipartUploads").await?;
        let text = String::from_utf8_lossy(&body);
        let mut ids = Vec::new();
        for upload in text.split("<Upload>").skip(1) {
            let k = between(upload, "<Key>", "</Key>").map(unescape);
            let id = between(upload, "<UploadId>", "</UploadId>").map(unescape);
            if let (Some(k), Some(id)) = (k, id) {
                if k == key.as_ref() {
                    ids.push(id);
                }
            }
        }
        Ok(ids)
    }

    /// The keys and upload ids of the multipart uploads in progress under `prefix` (a folder).
    pub(crate) async fn pending_under(
        &self,
        s3: &AmazonS3,
        prefix: &StorePath,
    ) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        // Pages of up to 1000 uploads, followed by their markers.
        let mut marker: Option<(String, String)> = None;
        for _ in 0..10_000 {
            let mut url = format!(
                "{}/?uploads&prefix={}",
                self.base,
                encode(&format!("{}/", prefix.as_ref()))
            );
            if let Some((k, id)) = &marker {
                url.push_str(&format!(
                    "&key-marker={}&upload-id-marker={}",
                    encode(k),
                    encode(id)
                ));
            }
            let req = http::Request::builder()
                .method("GET")
                .uri(&url)
                .body(HttpRequestBody::empty())
                .map_err(|e| {
                    Error::msg(format!("ListMultipartUploads: {}", super::store_text(&e)))
                })?;
            let body = self.send(s3, req, "S3 ListMultipartUploads").await?;
            let text = String::from_utf8_lossy(&body);
            for upload in text.split("<Upload>").skip(1) {
                let k = between(upload, "<Key>", "</Key>").map(unescape);
                let id = between(upload, "<UploadId>", "</UploadId>").map(unescape);
                if let (Some(k), Some(id)) = (k, id) {
                    out.push((k, id));
                }
            }
            let truncated = between(&text, "<IsTruncated>", "</IsTruncated>") == Some("true");
            let next = (
                between(&text, "<NextKeyMarker>", "</NextKeyMarker>").map(unescape),
                between(&text, "<NextUploadIdMarker>", "</NextUploadIdMarker>").map(unescape),
            );
            match next {
                (Some(k), Some(id)) if truncated => marker = Some((k, id)),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Copies bytes `range` of the object `from` (of ETag `if_match`, when given: a source
    /// replaced meanwhile is refused) as part `part` (1-based) of the upload `id` to `to`,
    /// server-side; returns the part's ETag.
    #[allow(clippy::too_many_arguments)] // one per field of S3's request
    pub(crate) async fn upload_part_copy(
        &self,
        s3: &AmazonS3,
        to: &StorePath,
        id: &str,
        part: usize,
        from: &StorePath,
        range: std::ops::Range<u64>,
        if_match: Option<&str>,
    ) -> Result<String> {
        let bucket = self.bucket_name();
        let url = format!(
            "{}/{}?partNumber={part}&uploadId={}",
            self.base,
            encode_path(to.as_ref()),
            encode(id)
        );
        let req = http::Request::builder()
            .method("PUT")
            .uri(&url)
            .header(
                "x-amz-copy-source",
                format!("/{bucket}/{}", encode_path(from.as_ref())),
            )
            .header(
                "x-amz-copy-source-range",
                format!("bytes={}-{}", range.start, range.end - 1),
            );
        let req = match if_match {
            Some(e) => req.header("x-amz-copy-source-if-match", e),
            None => req,
        };
        let req = req
            .body(HttpRequestBody::empty())
            .map_err(|e| Error::msg(format!("UploadPartCopy: {}", super::store_text(&e))))?;
        let body = self.send(s3, req, "S3 UploadPartCopy").await?;
        let text = String::from_utf8_lossy(&body);
        between(&text, "<ETag>", "</ETag>")
            .map(|e| unescape(e).trim_matches('"').to_string())
            .ok_or_else(|| Error::msg(format!("S3 UploadPartCopy: no ETag in its answer: {text}")))
    }

    fn bucket_name(&self) -> String {
        // Path style: the last segment of the base; virtual-hosted: the first label of its host.
        let rest = self.base.split("://").nth(1).unwrap_or(&self.base);
        match rest.split_once('/') {
            Some((_, path)) => path.rsplit('/').next().unwrap_or(path).to_string(),
            None => rest.split('.').next().unwrap_or(rest).to_string(),
        }
    }
}

/// Aborts every multipart upload in progress for `path` in `s3`: what writers that died left.
pub(crate) async fn abort_pending(
    bucket: &S3Bucket,
    s3: &Arc<AmazonS3>,
    path: &StorePath,
) -> Result<usize> {
    let ids = bucket.pending_uploads(s3, path).await?;
    for id in &ids {
        s3.abort_multipart(path, &id.clone()).await.map_err(|e| {
            Error::msg(format!(
                "aborting upload {id} of {path}: {}",
                super::store_text(&e)
            ))
        })?;
    }
    Ok(ids.len())
}

/// Aborts every multipart upload in progress under the folder `prefix`: what writers of
/// blocks that died left.
pub(crate) async fn abort_under(
    bucket: &S3Bucket,
    s3: &Arc<AmazonS3>,
    prefix: &StorePath,
) -> Result<usize> {
    let ups = bucket.pending_under(s3, prefix).await?;
    for (key, id) in &ups {
        s3.abort_multipart(&StorePath::from(key.as_str()), &id.clone())
            .await
            .map_err(|e| {
                Error::msg(format!(
                    "aborting upload {id} of {key}: {}",
                    super::store_text(&e)
                ))
            })?;
    }
    Ok(ups.len())
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let at = s.find(open)? + open.len();
    let end = s[at..].find(close)? + at;
    Some(&s[at..end])
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// `s` percent-encoded for a query value (RFC 3986 unreserved characters kept).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A key percent-encoded for a URL path (its slashes kept).
fn encode_path(s: &str) -> String {
    s.split('/').map(encode).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_url_and_the_listing_are_read_right() {
        let b = AmazonS3Builder::new()
            .with_bucket_name("data")
            .with_endpoint("http://127.0.0.1:9000/")
            .with_region("eu-west-1");
        let s = S3Bucket::of(&b).unwrap();
        assert_eq!(
            (s.base.as_str(), s.bucket_name().as_str(), s.allow_http),
            ("http://127.0.0.1:9000/data", "data", true)
        );
        let aws = S3Bucket::of(
            &AmazonS3Builder::new()
                .with_bucket_name("bk")
                .with_region("us-west-2"),
        )
        .unwrap();
        assert_eq!(
            (aws.base.as_str(), aws.bucket_name().as_str()),
            ("https://bk.s3.us-west-2.amazonaws.com", "bk")
        );
        assert_eq!(encode_path("a b/c+d.ra"), "a%20b/c%2Bd.ra");
        let xml = "<ListMultipartUploadsResult><Upload><Key>x/a.ra</Key><UploadId>1&amp;2</UploadId></Upload><Upload><Key>x/a.ra.tmp</Key><UploadId>3</UploadId></Upload></ListMultipartUploadsResult>";
        let ups: Vec<(String, String)> = xml
            .split("<Upload>")
            .skip(1)
            .map(|u| {
                (
                    unescape(between(u, "<Key>", "</Key>").unwrap()),
                    unescape(between(u, "<UploadId>", "</UploadId>").unwrap()),
                )
            })
            .collect();
        assert_eq!(ups[0], ("x/a.ra".to_string(), "1&2".to_string()));
    }
}
