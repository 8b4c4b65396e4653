package kpulse.issuer;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring Authorization Server as Spring Boot configures it from properties alone: the registered
 * clients (client credentials grant, their secrets and scopes), the issuer URL, the token endpoint
 * ({@code /oauth2/token}), the JWKS ({@code /oauth2/jwks}) and OpenID discovery. Started by
 * {@code localkafka/oidc_issuer.py} with {@code --spring.config.location=file:...}.
 */
@SpringBootApplication
public class OidcIssuer {
    public static void main(String[] args) {
        SpringApplication.run(OidcIssuer.class, args);
    }
}
