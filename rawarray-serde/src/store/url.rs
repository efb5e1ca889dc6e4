//! Object-store URLs: which store and object a URL names, the store configured from the
//! environment as object_store's builders read it and from a caller's options under fsspec's
//! names (feature `cloud`). The Python package and `ra` open every URL here.

use std::collections::BTreeMap;
use std::sync::Arc;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::multipart::MultipartStore;
use object_store::path::Path as StorePath;
use object_store::{ClientConfigKey, ObjectStore, ObjectStoreScheme};

use super::s3::{abort_pending, S3Bucket};
use crate::error::{shown_url, Error, Result};

/// The URL kinds rawarray opens, for messages.
pub const SCHEMES: &str = "s3://, s3a://, gs://, az://, abfs(s)://, azure://, http(s)://, file://";

/// Whether `text` names an object in a store rather than a local path: `scheme://` with a
/// scheme [`StoreUrl::parse`] opens (any case). `ra` and `ra sql` tell their URL arguments
/// from paths by it.
///
/// ```
/// use rawarray_serde::store::is_url;
/// assert!(is_url("s3://bucket/run.ra") && is_url("HTTPS://host/a.ra") && is_url("file:///tmp/a.ra"));
/// assert!(!is_url("run.ra") && !is_url("ftp://host/a.ra") && !is_url("c:/data/a.ra"));
/// ```
pub fn is_url(text: &str) -> bool {
    const OPENED: &[&str] = &[
        "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https", "file",
    ];
    text.split_once("://")
        .is_some_and(|(scheme, _)| OPENED.iter().any(|s| s.eq_ignore_ascii_case(scheme)))
}

/// Options for a store, by name: fsspec's (s3fs, gcsfs, adlfs: `key`, `secret`, `token`,
/// `endpoint_url`, `region_name`, `anon`, `account_name`, `account_key`, ...) or
/// object_store's own (`aws_endpoint`, `google_service_account`, `azure_storage_use_emulator`,
/// `allow_http`, ...), as text (`"true"` for a flag).
pub type StorageOptions = BTreeMap<String, String>;

/// Option names whose values are secrets: never printed.
const SECRET: &[&str] = &[
    "secret",
    "token",
    "account_key",
    "sas_token",
    "connection_string",
    "client_secret",
    "aws_secret_access_key",
    "secret_access_key",
    "aws_session_token",
    "session_token",
    "google_service_account_key",
    "service_account_key",
    "azure_storage_account_key",
    "access_key",
    "azure_storage_sas_key",
    "sas_key",
    "azure_client_secret",
];

/// An object-store URL opened: the store (its backend configured), the object's path in it,
/// and what a failed request's message should add (where credentials were looked for).
#[derive(Debug, Clone)]
pub struct StoreUrl {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// The object's path in the store.
    pub path: StorePath,
    /// The URL as given.
    pub url: String,
    /// The URL as messages show it: as given, but for a password in it, replaced by `***`
    /// (see [`shown_url`]).
    pub shown: String,
    /// The S3 store, when the URL is one: the writer copies parts server-side through it.
    pub s3: Option<Arc<AmazonS3>>,
    /// The store's numbered multipart API (S3, GCS, Azure): a whole write sends its head last.
    numbered: Option<PartsApi>,
    bucket: Option<S3Bucket>,
    credentials: Credentials,
}

/// A store's numbered multipart API (its own `Debug`: the trait has none).
#[derive(Clone)]
struct PartsApi(Arc<dyn MultipartStore>);

impl std::fmt::Debug for PartsApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartsApi")
    }
}

/// Where a store's credentials came from, for messages (never their values).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Credentials {
    /// None needed (local files, HTTP, an anonymous request).
    None,
    /// Given, by these names.
    Given(Vec<String>),
    /// None given: the builder falls back on what it looks for (named in the message).
    Looked(&'static str),
}

const AWS_LOOKED: &str = "no credentials were given: rawarray looked for AWS_ACCESS_KEY_ID and \
AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, \
AWS_CONTAINER_CREDENTIALS_RELATIVE_URI in the environment and the storage_options keys `key` and \
`secret` (or aws_access_key_id and aws_secret_access_key), then asked the EC2 instance metadata \
service; set those, or pass storage_options={\"anon\": True} for a public bucket";
const GCS_LOOKED: &str = "no credentials were given: rawarray looked for \
GOOGLE_SERVICE_ACCOUNT (a key file's path), GOOGLE_SERVICE_ACCOUNT_KEY, \
GOOGLE_APPLICATION_CREDENTIALS in the environment and the storage_options key `token` (a key \
file's path), then gcloud's application default credentials and the instance metadata \
service; set one, or pass storage_options={\"anon\": True} for a public bucket";
const AZURE_LOOKED: &str = "no credentials were given: rawarray looked for \
AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY, AZURE_CLIENT_ID with AZURE_CLIENT_SECRET and \
AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE in the environment and the storage_options keys \
`account_key`, `sas_token`, `connection_string`, `client_secret`, then the instance metadata \
service; set one, pass storage_options={\"anon\": True} for a public container, or \
{\"use_emulator\": True} for Azurite";

impl StoreUrl {
    /// Opens `url` (one of [`SCHEMES`]) with `options` over what the environment says
    /// (`AWS_*`, `GOOGLE_*`, `AZURE_*`, as object_store's builders read them). An unknown
    /// option is an error naming it and the names that are known; a secret's value is never in
    /// a message.
    ///
    /// ```
    /// use rawarray_serde::store::{StorageOptions, StoreUrl};
    /// let opts = StorageOptions::from([
    ///     ("endpoint_url".to_string(), "http://127.0.0.1:9000".to_string()),
    ///     ("key".to_string(), "test".to_string()),
    ///     ("secret".to_string(), "hush".to_string()),
    /// ]);
    /// let u = StoreUrl::parse("s3://bucket/runs/field.ra", &opts).unwrap();
    /// assert_eq!(u.path.as_ref(), "runs/field.ra");
    /// let err = StoreUrl::parse("s3://bucket/x.ra", &StorageOptions::from([
    ///     ("secret_sauce".to_string(), "hush".to_string()),
    /// ])).unwrap_err().to_string();
    /// assert!(err.contains("secret_sauce") && !err.contains("hush"), "{err}");
    /// ```
    pub fn parse(url: &str, options: &StorageOptions) -> Result<StoreUrl> {
        // Messages name the URL as shown (a password in it replaced); requests use it as given.
        let given = url;
        let shown = shown_url(given);
        let url: &str = &shown;
        let parsed = url::Url::parse(given)
            .map_err(|e| Error::msg(format!("{url}: not a URL ({e}); rawarray opens {SCHEMES}")))?;
        let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| {
            Error::msg(format!(
                "{url}: not an object-store URL that rawarray opens ({SCHEMES}): {e}"
            ))
        })?;
        let built = |e: object_store::Error| {
            Error::msg(format!("{url}: {}", scrub(&e.to_string(), options)))
        };
        let mut s3 = None;
        let mut numbered = None;
        let mut bucket = None;
        let (store, credentials): (Arc<dyn ObjectStore>, Credentials) = match scheme {
            ObjectStoreScheme::AmazonS3 => {
                let mut b = AmazonS3Builder::from_env().with_url(given);
                // The builder parses the URL only when built: the bucket is set here too, so
                // that `S3Bucket::of` (recover's listing, the part copies) sees it.
                if let ("s3" | "s3a", Some(host)) = (parsed.scheme(), parsed.host_str()) {
                    b = b.with_bucket_name(host);
                }
                let mut given = Vec::new();
                for (k, v) in options {
                    let (key, value) = s3_option(url, k, v)?;
                    if matches!(
                        key,
                        AmazonS3ConfigKey::AccessKeyId
                            | AmazonS3ConfigKey::SecretAccessKey
                            | AmazonS3ConfigKey::Token
                    ) {
                        given.push(k.clone());
                    }
                    b = b.with_config(key, value);
                }
                let env = [
                    "AWS_ACCESS_KEY_ID",
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                ]
                .iter()
                .filter(|v| std::env::var_os(v).is_some())
                .map(|v| (*v).to_string());
                given.extend(env);
                let skip = b
                    .get_config_value(&AmazonS3ConfigKey::SkipSignature)
                    .is_some_and(|v| v == "true");
                bucket = S3Bucket::of(&b);
                let s = Arc::new(b.build().map_err(built)?);
                s3 = Some(Arc::clone(&s));
                numbered = Some(PartsApi(s.clone()));
                let c = if skip {
                    Credentials::None
                } else if given.is_empty() {
                    Credentials::Looked(AWS_LOOKED)
                } else {
                    Credentials::Given(given)
                };
                (s, c)
            }
            ObjectStoreScheme::GoogleCloudStorage => {
                let mut b = GoogleCloudStorageBuilder::from_env().with_url(given);
                let mut given: Vec<String> = [
                    "GOOGLE_SERVICE_ACCOUNT",
                    "GOOGLE_SERVICE_ACCOUNT_PATH",
                    "GOOGLE_SERVICE_ACCOUNT_KEY",
                    "GOOGLE_APPLICATION_CREDENTIALS",
                ]
                .iter()
                .filter(|v| std::env::var_os(v).is_some())
                .map(|v| (*v).to_string())
                .collect();
                let mut skip = false;
                for (k, v) in options {
                    let (key, value) = gcs_option(url, k, v)?;
                    match key {
                        GoogleConfigKey::SkipSignature => skip = value == "true",
                        GoogleConfigKey::ServiceAccount
                        | GoogleConfigKey::ServiceAccountKey
                        | GoogleConfigKey::ApplicationCredentials => given.push(k.clone()),
                        _ => {}
                    }
                    b = b.with_config(key, value);
                }
                let c = if skip {
                    Credentials::None
                } else if given.is_empty() {
                    Credentials::Looked(GCS_LOOKED)
                } else {
                    Credentials::Given(given)
                };
                let s = Arc::new(b.build().map_err(built)?);
                numbered = Some(PartsApi(s.clone()));
                (s, c)
            }
            ObjectStoreScheme::MicrosoftAzure => {
                let mut b = MicrosoftAzureBuilder::from_env().with_url(given);
                let mut given: Vec<String> = [
                    "AZURE_STORAGE_ACCOUNT_KEY",
                    "AZURE_STORAGE_ACCESS_KEY",
                    "AZURE_STORAGE_SAS_KEY",
                    "AZURE_CLIENT_SECRET",
                    "AZURE_FEDERATED_TOKEN_FILE",
                ]
                .iter()
                .filter(|v| std::env::var_os(v).is_some())
                .map(|v| (*v).to_string())
                .collect();
                let mut none = false;
                for (k, v) in options {
                    for (key, value) in azure_options(url, k, v)? {
                        match key {
                            AzureConfigKey::SkipSignature | AzureConfigKey::UseEmulator => {
                                none |= value == "true";
                            }
                            AzureConfigKey::AccessKey
                            | AzureConfigKey::SasKey
                            | AzureConfigKey::ClientSecret
                            | AzureConfigKey::Token => given.push(k.clone()),
                            _ => {}
                        }
                        b = b.with_config(key, value);
                    }
                }
                let c = if none {
                    Credentials::None
                } else if given.is_empty() {
                    Credentials::Looked(AZURE_LOOKED)
                } else {
                    Credentials::Given(given)
                };
                let s = Arc::new(b.build().map_err(built)?);
                numbered = Some(PartsApi(s.clone()));
                (s, c)
            }
            ObjectStoreScheme::Http => {
                let mut b = HttpBuilder::new()
                    .with_url(&parsed[..url::Position::BeforePath])
                    // An http:// URL asks for plain HTTP (object_store refuses it by default).
                    .with_config(
                        ClientConfigKey::AllowHttp,
                        (parsed.scheme() == "http").to_string(),
                    );
                for (k, v) in options {
                    let key: ClientConfigKey = k.parse().map_err(|_| {
                        unknown(
                            url,
                            k,
                            "HTTP",
                            "object_store's client keys (timeout, allow_http, ...)",
                        )
                    })?;
                    b = b.with_config(key, v);
                }
                (Arc::new(b.build().map_err(built)?), Credentials::None)
            }
            ObjectStoreScheme::Local => {
                if let Some(k) = options.keys().next() {
                    return Err(unknown(url, k, "file://", "none"));
                }
                (Arc::new(LocalFileSystem::new()), Credentials::None)
            }
            // A memory:// store is empty in every process that builds one: nothing to open.
            other => {
                return Err(Error::msg(format!(
                    "{url}: rawarray opens {SCHEMES} URLs, not {other:?} ones"
                )))
            }
        };
        Ok(StoreUrl {
            store,
            path,
            url: given.to_string(),
            shown: url.to_string(),
            s3,
            numbered,
            bucket,
            credentials,
        })
    }

    /// Removes what writers which died left at this URL's path, and says how many uploads and
    /// objects it removed: S3's multipart uploads of the object (listed by its
    /// ListMultipartUploads), and the blocks of [`StoreArrayWriter`](super::StoreArrayWriter)s
    /// never finished (the hidden folder `.NAME.rawarray-parts/` beside the object, every
    /// session, and S3's uploads under it). Run it when no writer of the path is running: a
    /// running many-writer session loses its blocks (its finish then refuses, naming the
    /// chunks missing). Other stores keep no uploads that matter (Azure drops uncommitted
    /// blocks within 7 days; HTTP and local files have none).
    pub async fn recover(&self) -> Result<usize> {
        use futures::{StreamExt, TryStreamExt};
        let explain = |e: Error| Error::msg(self.explain(&e.to_string()));
        let parts = super::many::parts_prefix(&self.path);
        let mut n = 0;
        if let (Some(s3), Some(b)) = (&self.s3, &self.bucket) {
            n += abort_pending(b, s3, &self.path).await.map_err(explain)?;
            n += super::s3::abort_under(b, s3, &parts)
                .await
                .map_err(explain)?;
        }
        if self.s3.is_none() && self.url.starts_with("http") {
            // A plain HTTP server lists nothing and holds no writers' blocks.
            return Ok(n);
        }
        let store_err = |e: object_store::Error| explain(Error::msg(super::store_text(&e)));
        let listed: Vec<object_store::ObjectMeta> =
            match self.store.list(Some(&parts)).try_collect().await {
                Ok(l) => l,
                // A store that cannot list (HTTP) holds no writers' blocks.
                Err(object_store::Error::NotImplemented { .. }) => return Ok(n),
                Err(e) => return Err(store_err(e)),
            };
        n += listed.len();
        let stream = futures::stream::iter(listed.into_iter().map(|m| Ok(m.location))).boxed();
        self.store
            .delete_stream(stream)
            .try_collect::<Vec<_>>()
            .await
            .map_err(store_err)?;
        Ok(n)
    }

    /// A [`StoreArrayWriter`](super::StoreArrayWriter) of the object at this URL (a new
    /// session, or a worker's of `session`), copying parts server-side when the store is S3.
    pub fn array_writer(
        &self,
        header: crate::Header,
        opts: &crate::WriteOptions,
        session: Option<&str>,
    ) -> Result<super::StoreArrayWriter> {
        let w = match session {
            Some(s) => super::StoreArrayWriter::resume(
                self.store.clone(),
                self.path.clone(),
                header,
                opts,
                s,
            )?,
            None => {
                super::StoreArrayWriter::new(self.store.clone(), self.path.clone(), header, opts)?
            }
        };
        let s3 = match (&self.s3, &self.bucket) {
            (Some(store), Some(bucket)) => Some(super::many::S3 {
                store: store.clone(),
                bucket: bucket.clone(),
            }),
            _ => None,
        };
        Ok(w.with_s3(s3))
    }

    /// Writes the object at this URL whatever `write` writes, as
    /// [`put_atomic_to`](super::put_atomic_to) does (a chunked section written by
    /// [`write_section_to`](crate::section::write::write_section_to) goes up as it is
    /// encoded, on S3, GCS and Azure), after aborting the S3 multipart uploads a writer
    /// that died left at this path (as [`StoreUrl::recover`] does; a store that refuses the
    /// listing is written all the same).
    /// Errors start with the URL and say where credentials were looked for when that is the
    /// trouble.
    pub fn put_atomic<F>(
        &self,
        handle: &tokio::runtime::Handle,
        opts: &super::UploadOptions,
        write: F,
    ) -> Result<object_store::PutResult>
    where
        F: FnOnce(&mut dyn crate::section::write::Sink) -> Result<()>,
    {
        if let (Some(s3), Some(b)) = (&self.s3, &self.bucket) {
            let _ = handle.block_on(abort_pending(b, s3, &self.path));
        }
        super::put_atomic_to(
            handle,
            &self.store,
            self.numbered.as_ref().map(|n| &n.0),
            &self.path,
            opts,
            write,
        )
        .map_err(|e| self.rewrap(e))
    }

    /// A library error of a request to this store, explained (see [`StoreUrl::explain`]),
    /// of the same category.
    pub fn rewrap(&self, e: Error) -> Error {
        let msg = self.explain(&e.to_string());
        if e.category() == crate::Category::Io {
            let io: std::io::Error = e.into();
            return std::io::Error::new(io.kind(), msg).into();
        }
        Error::msg(msg)
    }

    /// `message` (a failed request's) with the URL in front, and, for an answer that looks
    /// like missing or refused credentials, where credentials were looked for (never a secret).
    pub fn explain(&self, message: &str) -> String {
        let lower = message.to_ascii_lowercase();
        let about_credentials = [
            "credential",
            "403",
            "401",
            "forbidden",
            "unauthorized",
            "metadata",
            "accessdenied",
            "access denied",
            "signature",
        ]
        .iter()
        .any(|w| lower.contains(w));
        let hint = match (&self.credentials, about_credentials) {
            (Credentials::Looked(looked), true) => format!(" ({looked})"),
            (Credentials::Given(names), true) => format!(
                " (the store refused the credentials given by {}; check them, and the endpoint and region)",
                names.join(", ")
            ),
            _ => String::new(),
        };
        format!("{}: {message}{hint}", self.shown)
    }
}

/// `text` without the value of any secret option (a store's error may quote a request) and
/// with any URL's password shown as `***`.
fn scrub(text: &str, options: &StorageOptions) -> String {
    let mut out = shown_url(text).into_owned();
    for (k, v) in options {
        if SECRET.contains(&k.as_str()) && !v.is_empty() {
            out = out.replace(v.as_str(), "***");
        }
    }
    out
}

fn unknown(url: &str, key: &str, kind: &str, known: &str) -> Error {
    Error::msg(format!(
        "{url}: storage_options key `{key}` is not one rawarray knows for {kind} URLs; it knows {known}"
    ))
}

fn truth(v: &str) -> String {
    matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on").to_string()
}

/// An S3 option: s3fs's name or object_store's.
fn s3_option(url: &str, k: &str, v: &str) -> Result<(AmazonS3ConfigKey, String)> {
    use AmazonS3ConfigKey as K;
    Ok(match k {
        "key" => (K::AccessKeyId, v.into()),
        "secret" => (K::SecretAccessKey, v.into()),
        "token" => (K::Token, v.into()),
        "endpoint_url" | "endpoint" => (K::Endpoint, v.into()),
        "region_name" | "region" => (K::Region, v.into()),
        "anon" => (K::SkipSignature, truth(v)),
        "use_ssl" => (K::Client(ClientConfigKey::AllowHttp), (truth(v) == "false").to_string()),
        _ => match k.parse::<K>() {
            Ok(key) => (key, v.into()),
            Err(_) => {
                return Err(unknown(
                    url,
                    k,
                    "s3://",
                    "s3fs's key, secret, token, endpoint_url, region_name, anon, use_ssl, and object_store's (aws_endpoint, aws_allow_http, ...)",
                ))
            }
        },
    })
}

/// A GCS option: gcsfs's name or object_store's.
fn gcs_option(url: &str, k: &str, v: &str) -> Result<(GoogleConfigKey, String)> {
    use GoogleConfigKey as K;
    Ok(match k {
        "token" if v == "anon" => (K::SkipSignature, "true".into()),
        "token" => (K::ServiceAccount, v.into()),
        "anon" => (K::SkipSignature, truth(v)),
        "endpoint_url" | "endpoint" => (K::BaseUrl, v.into()),
        _ => match k.parse::<K>() {
            Ok(key) => (key, v.into()),
            Err(_) => {
                return Err(unknown(
                    url,
                    k,
                    "gs://",
                    "gcsfs's token (a key file's path, or \"anon\"), anon, endpoint_url, and object_store's (google_service_account, google_base_url, allow_http, ...)",
                ))
            }
        },
    })
}

/// An Azure option: adlfs's name or object_store's (a connection string is several).
fn azure_options(url: &str, k: &str, v: &str) -> Result<Vec<(AzureConfigKey, String)>> {
    use AzureConfigKey as K;
    Ok(match k {
        "account_name" => vec![(K::AccountName, v.into())],
        "account_key" => vec![(K::AccessKey, v.into())],
        "sas_token" => vec![(K::SasKey, v.into())],
        "anon" => vec![(K::SkipSignature, truth(v))],
        "use_emulator" => vec![(K::UseEmulator, truth(v))],
        "client_id" => vec![(K::ClientId, v.into())],
        "client_secret" => vec![(K::ClientSecret, v.into())],
        "tenant_id" => vec![(K::AuthorityId, v.into())],
        "endpoint_url" => vec![(K::Endpoint, v.into())],
        "connection_string" => {
            let mut out = Vec::new();
            for part in v.split(';').filter(|p| !p.is_empty()) {
                let (name, value) = part.split_once('=').unwrap_or((part, ""));
                match name {
                    "AccountName" => out.push((K::AccountName, value.to_string())),
                    "AccountKey" => out.push((K::AccessKey, value.to_string())),
                    "SharedAccessSignature" => out.push((K::SasKey, value.to_string())),
                    "BlobEndpoint" => out.push((K::Endpoint, value.to_string())),
                    "UseDevelopmentStorage" => out.push((K::UseEmulator, truth(value))),
                    "DefaultEndpointsProtocol" | "EndpointSuffix" | "QueueEndpoint" | "TableEndpoint" | "FileEndpoint" => {}
                    other => {
                        return Err(Error::msg(format!(
                            "{url}: the connection string's part `{other}` is not one rawarray reads (AccountName, AccountKey, SharedAccessSignature, BlobEndpoint, UseDevelopmentStorage)"
                        )))
                    }
                }
            }
            out
        }
        _ => match k.parse::<K>() {
            Ok(key) => vec![(key, v.into())],
            Err(_) => {
                return Err(unknown(
                    url,
                    k,
                    "az://, abfs://",
                    "adlfs's account_name, account_key, sas_token, connection_string, anon, client_id, client_secret, tenant_id, endpoint_url, use_emulator, and object_store's (azure_storage_account_name, ...)",
                ))
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> StorageOptions {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_s3_url_names_its_bucket_for_the_calls_object_store_does_not_make() {
        let u = StoreUrl::parse("s3://data/runs/x.ra", &StorageOptions::new()).unwrap();
        assert!(u.s3.is_some());
        let b = u.bucket.expect("the bucket of an s3:// URL");
        assert!(format!("{b:?}").contains("data"), "{b:?}");
    }

    #[test]
    fn every_scheme_parses_and_unknown_options_are_named() {
        for url in [
            "s3://b/k.ra",
            "s3a://b/k.ra",
            "gs://b/k.ra",
            "az://c/k.ra",
            "abfs://c@acct.dfs.core.windows.net/k.ra",
            "https://example.invalid/k.ra",
            "file:///tmp/k.ra",
        ] {
            let o = if url.starts_with("az") || url.starts_with("abfs") {
                opts(&[("account_name", "acct"), ("anon", "true")])
            } else {
                StorageOptions::new()
            };
            let u = StoreUrl::parse(url, &o).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert!(u.path.as_ref().ends_with("k.ra"), "{url}: {}", u.path);
        }
        let e = StoreUrl::parse("gs://b/k.ra", &opts(&[("colour", "red")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`colour`") && e.contains("gcsfs's token"), "{e}");
        let e = StoreUrl::parse("memory:///k.ra", &StorageOptions::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("s3://"), "{e}");
        let e = StoreUrl::parse("ftp://host/k.ra", &StorageOptions::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("ftp://host/k.ra"), "{e}");
    }

    #[test]
    fn credential_hints_name_what_was_looked_for_and_no_secret() {
        let u = StoreUrl::parse("s3://b/k.ra", &opts(&[("region_name", "us-east-1")])).unwrap();
        let m = u.explain(
            "Generic S3 error: Error fetching token from instance metadata: 403 Forbidden",
        );
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            assert!(
                m.contains("AWS_ACCESS_KEY_ID") && m.contains("storage_options"),
                "{m}"
            );
        }
        let u = StoreUrl::parse(
            "s3://b/k.ra",
            &opts(&[("key", "AKIDEXAMPLE"), ("secret", "wJalrXUtnFEMI")]),
        )
        .unwrap();
        let m = u.explain("403 Forbidden: SignatureDoesNotMatch");
        assert!(
            m.contains("given by") && m.contains("key") && !m.contains("wJalrXUtnFEMI"),
            "{m}"
        );
        assert_eq!(
            scrub("a wJalrXUtnFEMI b", &opts(&[("secret", "wJalrXUtnFEMI")])),
            "a *** b"
        );
        // Not about credentials: no hint.
        assert_eq!(u.explain("404 Not Found"), "s3://b/k.ra: 404 Not Found");
    }
}
