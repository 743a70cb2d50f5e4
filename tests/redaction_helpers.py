"""One example of every kind of secret the vault must never store (docs/redaction.md), with the
kind its marker names. Assembled at run time so that this file itself holds no literal key."""

from __future__ import annotations

_B = "-----BEGIN "
SECRETS: dict[str, tuple[str, str]] = {
    # name: (text as a user would paste it, the secret part that must not be stored)
    "aws-key": ("AWS_ACCESS_KEY_ID=" + "AKIA" + "QYLPMN5HZ3K7XW2V", "AKIA" + "QYLPMN5HZ3K7XW2V"),
    "aws-secret": (
        "AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzq8Lw3Rt2Vn9",
        "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzq8Lw3Rt2Vn9",
    ),
    "anthropic-key": (
        "export ANTHROPIC_API_KEY=" + "sk-ant-api03-" + "Zq8Lw3Rt2Vn9Kp4Xy7Bm1Cd6Ef0Gh5",
        "Zq8Lw3Rt2Vn9Kp4Xy7Bm1Cd6Ef0Gh5",
    ),
    "openai-key": ("the key is " + "sk-proj-" + "Hq2Wm8Zr4Tx6Yv1Bn3Kc5Ld7Pf9Sg0J", "Hq2Wm8Zr4Tx6Yv1Bn3Kc5Ld7Pf9Sg0J"),
    "github-token": (
        "token " + "ghp_" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz0Bc1Df3Gh5",
        "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz0Bc1Df3Gh5",
    ),
    "slack-token": ("SLACK " + "xoxb-" + "2847561930-Tq8Wz3Rm5Kp1", "2847561930-Tq8Wz3Rm5Kp1"),
    "google-api-key": (
        "maps key " + "AIza" + "SyB7kQ2mN9xW4rT6yU8iO0pL3jH5gF1dS2a",
        "SyB7kQ2mN9xW4rT6yU8iO0pL3jH5gF1dS2a",
    ),
    "stripe-key": ("STRIPE=" + "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    "jwt": (
        "Authorization: Bearer " + "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N",
        "dozjgNryP4J3jVmNHl0w5N",
    ),
    "private-key": (
        _B + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9XkT3mQpZ\nw4Lr8Yc2Nv6Hs0Jd\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA7bq9XkT3mQpZ",
    ),
    "password": ("db password=Tr0ub4dor&3x", "Tr0ub4dor&3x"),
    "password-zh": ("資料庫密碼：Hk7!pz92qa", "Hk7!pz92qa"),
    "token": ("api_token=9f8e7d6c5b4a3210ffee", "9f8e7d6c5b4a3210ffee"),
    "secret": ('client_secret: "Qm4Nx8Rz2Lp6Wt0Vy3"', "Qm4Nx8Rz2Lp6Wt0Vy3"),
    "connection-password": ("postgres://app_user:Sup3rS3cretPw@db.internal:5432/app", "Sup3rS3cretPw"),
    "high-entropy": ("unknown vendor key Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2X", "Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2X"),
}


def all_secrets_text(sep: str = "\n") -> str:
    return sep.join(text for text, _ in SECRETS.values())


def secret_values() -> list[str]:
    return [value for _, value in SECRETS.values()]
